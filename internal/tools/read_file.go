package tools

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

//go:embed read_file.md
var readFileDescription string

const (
	readFullMaxLines = 2000   // files up to this many lines are shown whole
	readPreviewLines = 100    // larger files read without a range show this many
	readMaxLineChars = 2000   // longer lines are cut
	readMaxChars     = 200000 // output cap, so a range of huge lines stays bounded
)

type readFileParams struct {
	Path      string `json:"path" description:"File path, relative to the workspace root"`
	StartLine int    `json:"start_line,omitempty" description:"First line to read, 1-based (optional)"`
	EndLine   int    `json:"end_line,omitempty" description:"Last line to read, inclusive (optional)"`
}

// NewReadFile returns the read_file tool.
func NewReadFile(ws *Workspace) Tool {
	return NewFunc("read_file", readFileDescription, true,
		func(ctx context.Context, p readFileParams) (Result, error) { return readFile(ctx, ws, p) })
}

func readFile(ctx context.Context, ws *Workspace, p readFileParams) (Result, error) {
	abs, err := ws.Resolve(p.Path)
	if err != nil {
		return toolError(err), nil
	}
	rel := ws.Rel(abs)
	if p.StartLine < 0 || p.EndLine < 0 {
		return errorResult("start_line and end_line must be positive line numbers (1-based)"), nil
	}
	if p.EndLine > 0 && p.StartLine > p.EndLine {
		return errorResult("start_line %d is after end_line %d", p.StartLine, p.EndLine), nil
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	if fi.IsDir() {
		return errorResult("%q is a directory; use list_dir to see its entries", rel), nil
	}
	binary, err := fileIsBinary(abs)
	if err != nil {
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	if binary {
		return errorResult("%q looks like a binary file (NUL byte in its first 8 KiB); read_file shows text files only", rel), nil
	}

	ranged := p.StartLine > 0 || p.EndLine > 0
	first, last := 1, readFullMaxLines
	if ranged {
		first = max(p.StartLine, 1)
		last = first + readFullMaxLines - 1
		if p.EndLine > 0 {
			last = p.EndLine
		}
	}
	v, err := scanLines(ctx, abs, first, last)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("read_file %s: %w", rel, err)
		}
		return errorResult("%s", describeFileError(ws, abs, err)), nil
	}
	res := Result{Files: []FileRef{{Path: rel}}}
	switch {
	case v.total == 0:
		res.Content = fmt.Sprintf("(file %s is empty)", rel)
		return res, nil
	case ranged && first > v.total:
		return errorResult("start_line %d is past the end of %s, which has %d lines", first, rel, v.total), nil
	case !ranged && v.total > readFullMaxLines:
		// Too long to show whole: a preview and the way to read the rest.
		v.cutAt(readPreviewLines)
		res.Content = v.text() + fmt.Sprintf("\n\nfile has %d lines; showing 1-%d. Read more with start_line/end_line.",
			v.total, readPreviewLines)
		return res, nil
	}
	res.Content = v.text()
	shownLast := first + len(v.lines) - 1
	switch {
	case v.charCapped:
		res.Content += fmt.Sprintf("\n\n(output cut at %d characters; showing lines %d-%d of %d. Read more with start_line/end_line.)",
			readMaxChars, first, shownLast, v.total)
	case first > 1 || shownLast < v.total:
		res.Content += fmt.Sprintf("\n\n(showing lines %d-%d of %d)", first, shownLast, v.total)
	}
	return res, nil
}

// lineView is the numbered lines of one range plus the file's line count.
type lineView struct {
	first      int
	lines      []string
	total      int
	charCapped bool
}

func (v *lineView) cutAt(n int) {
	if len(v.lines) > n {
		v.lines = v.lines[:n]
	}
}

func (v *lineView) text() string {
	var b strings.Builder
	for i, l := range v.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6d\t%s", v.first+i, l)
	}
	return b.String()
}

// scanLines keeps lines first..last of the file and counts all of them,
// without holding more than the kept range in memory.
func scanLines(ctx context.Context, path string, first, last int) (*lineView, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	v := &lineView{first: first}
	chars := 0
	for n := 1; ; n++ {
		if n%10000 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		line, err := r.ReadString('\n')
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return v, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		v.total = n
		if n >= first && n <= last && !v.charCapped {
			line = strings.TrimRight(line, "\r\n")
			if len(line) > readMaxLineChars {
				line = cutUTF8(line, readMaxLineChars) + " [... line cut ...]"
			}
			if chars += len(line) + 8; chars > readMaxChars && len(v.lines) > 0 {
				v.charCapped = true
			} else {
				v.lines = append(v.lines, line)
			}
		}
		if errors.Is(err, io.EOF) {
			return v, nil
		}
	}
}

// cutUTF8 shortens s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
