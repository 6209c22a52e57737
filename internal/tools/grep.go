package tools

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

//go:embed grep.md
var grepDescription string

const (
	grepMaxMatches   = 100
	grepMaxLineChars = 300
	grepMaxFileBytes = 10 << 20 // larger files are data, not source
)

type grepParams struct {
	Pattern string `json:"pattern" description:"Regular expression (Go RE2 syntax)"`
	Path    string `json:"path,omitempty" description:"File or directory to search, relative to the workspace (default: the root)"`
	Glob    string `json:"glob,omitempty" description:"Only search files matching this glob, e.g. *.go or src/**/*.ts"`
}

// NewGrep returns the grep tool.
func NewGrep(ws *Workspace) Tool {
	return NewFunc("grep", grepDescription, true,
		func(ctx context.Context, p grepParams) (Result, error) { return grep(ctx, ws, p) })
}

func grep(ctx context.Context, ws *Workspace, p grepParams) (Result, error) {
	re, err := regexp.Compile(p.Pattern)
	if err != nil {
		return errorResult("invalid regular expression %q: %v (Go RE2 syntax; escape ( ) [ ] { } . * + ? with \\)", p.Pattern, err), nil
	}
	if p.Path == "" {
		p.Path = "."
	}
	start, err := ws.Resolve(p.Path)
	if err != nil {
		return toolError(err), nil
	}
	fi, err := os.Stat(start)
	if err != nil {
		return errorResult("%s", describeFileError(ws, start, err)), nil
	}
	filter, err := newNameFilter(p.Glob)
	if err != nil {
		return toolError(err), nil
	}

	sctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	s := &grepSearch{re: re}
	if fi.IsDir() {
		err = ws.walkFiles(sctx, start, func(abs, rel string) error {
			if !filter(rel) {
				return nil
			}
			return s.file(sctx, abs, rel)
		})
	} else {
		// An explicitly named file is searched even if ignored or filtered.
		if binary, _ := fileIsBinary(start); binary {
			return errorResult("%q looks like a binary file; grep searches text files only", ws.Rel(start)), nil
		}
		err = s.file(sctx, start, ws.Rel(start))
	}
	switch {
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("grep %q: %w", p.Pattern, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("grep %q took longer than %s; narrow it with path or glob", p.Pattern, searchTimeout), nil
	case err != nil && !errors.Is(err, filepath.SkipAll):
		return errorResult("grep %q in %q: %v", p.Pattern, p.Path, err), nil
	case len(s.out) == 0:
		return Result{Content: fmt.Sprintf("no matches for %q in %s", p.Pattern, ws.Rel(start))}, nil
	}
	content := strings.Join(s.out, "\n")
	if s.capped {
		content += fmt.Sprintf("\n\n(showing the first %d matches; there are more: narrow the pattern, path or glob)", grepMaxMatches)
	}
	return Result{Content: content}, nil
}

// newNameFilter matches a file's workspace-relative path against glob: by
// name when the glob has no slash, by whole path otherwise.
func newNameFilter(glob string) (func(rel string) bool, error) {
	glob = strings.Trim(strings.TrimSpace(glob), "/")
	if glob == "" {
		return func(string) bool { return true }, nil
	}
	if !doublestar.ValidatePattern(glob) {
		return nil, fmt.Errorf("bad glob pattern %q: check [ ], { } and \\ escapes", glob)
	}
	if !strings.Contains(glob, "/") {
		return func(rel string) bool { return doublestar.MatchUnvalidated(glob, path.Base(rel)) }, nil
	}
	return func(rel string) bool { return doublestar.MatchUnvalidated(glob, rel) }, nil
}

type grepSearch struct {
	re     *regexp.Regexp
	out    []string
	capped bool
}

// file appends the matches in one file; filepath.SkipAll ends the search
// once the cap is passed.
func (s *grepSearch) file(ctx context.Context, abs, rel string) error {
	f, err := os.Open(abs)
	if err != nil {
		return nil // unreadable files are skipped like binary ones
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > grepMaxFileBytes {
		return nil
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(binarySniffLen); IsBinary(head) {
		return nil
	}
	for n := 1; ; n++ {
		if n%10000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			line = strings.TrimRight(line, "\r\n")
			if s.re.MatchString(line) {
				if len(s.out) == grepMaxMatches {
					s.capped = true
					return filepath.SkipAll
				}
				if len(line) > grepMaxLineChars {
					line = cutUTF8(line, grepMaxLineChars) + " [...]"
				}
				s.out = append(s.out, fmt.Sprintf("%s:%d: %s", rel, n, line))
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil
		}
	}
}
