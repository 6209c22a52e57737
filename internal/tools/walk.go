package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// walkFiles calls fn for every regular file under start (a resolved path
// inside the workspace), in lexical order, leaving out what the workspace's
// file policy hides (see filetree). Symlinks are followed only to files
// inside the workspace, so a search never reads outside it. fn may return
// filepath.SkipAll to stop.
func (w *Workspace) walkFiles(ctx context.Context, start string, fn func(abs, rel string) error) error {
	return w.files.Walk(ctx, w.Rel(start), func(rel string, d fs.DirEntry) error {
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := w.Resolve(rel)
			if err != nil {
				return nil
			}
			if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
			return fn(target, rel)
		case d.Type().IsRegular():
			return fn(filepath.Join(w.root, filepath.FromSlash(rel)), rel)
		}
		return nil
	})
}

// Glob returns the workspace-relative paths of the files matching pattern,
// sorted. "**" matches any number of directories and {a,b} either
// alternative; what the file policy hides (.gitignore, .git, node_modules,
// vendor and similar) is left out. Only files are returned. The pattern
// must stay inside the workspace.
func (w *Workspace) Glob(ctx context.Context, pattern string) ([]string, error) {
	rel, err := w.relPattern(pattern)
	if err != nil {
		return nil, err
	}
	rel = strings.Trim(path.Clean(rel), "/")
	if rel == "." || rel == "" {
		return nil, fmt.Errorf("glob pattern %q matches no files: give a pattern such as \"**/*.go\"", pattern)
	}
	if !doublestar.ValidatePattern(rel) {
		return nil, fmt.Errorf("bad glob pattern %q: check [ ], { } and \\ escapes", pattern)
	}
	// The walk starts at the pattern's literal directory prefix; the rest
	// is matched below it, which may have been reached through a symlink
	// inside the workspace.
	base, rest := doublestar.SplitPattern(rel)
	if !hasMeta(rel) {
		base, rest = rel, ""
	}
	start, err := w.Resolve(base)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(start)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	if !fi.IsDir() {
		if rest == "" {
			return []string{w.Rel(start)}, nil
		}
		return nil, nil
	}
	if rest == "" {
		return nil, nil // a directory: only files are listed
	}
	startRel := w.Rel(start)
	var out []string
	err = w.walkFiles(ctx, start, func(abs, relPath string) error {
		below := strings.TrimPrefix(relPath, startRel+"/")
		if startRel == "." {
			below = relPath
		}
		if doublestar.MatchUnvalidated(rest, below) {
			out = append(out, relPath)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	sort.Strings(out)
	return out, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[{\`) }

// relPattern turns a glob pattern into one relative to the root, refusing
// patterns that would reach outside it.
func (w *Workspace) relPattern(pattern string) (string, error) {
	p := filepath.ToSlash(strings.TrimSpace(pattern))
	if p == "" {
		return "", errors.New(`glob pattern is empty: give a pattern such as "**/*.go"`)
	}
	if filepath.IsAbs(pattern) {
		root := filepath.ToSlash(w.root)
		if p != root && !strings.HasPrefix(p, root+"/") {
			return "", fmt.Errorf("%w: use a pattern relative to the workspace", &outsideError{path: pattern, root: w.root})
		}
		p = strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	}
	for _, s := range strings.Split(p, "/") {
		if s == ".." {
			return "", fmt.Errorf("%w: remove \"..\" from the pattern", &outsideError{path: pattern, root: w.root})
		}
	}
	return p, nil
}
