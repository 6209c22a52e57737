package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// walkFiles calls fn for every regular file under start (a resolved path
// inside the workspace), in lexical order, skipping ignored directories and
// files. Symlinks are followed only to files inside the workspace, so a
// search never reads outside it. fn may return filepath.SkipAll to stop.
func (w *Workspace) walkFiles(ctx context.Context, start string, fn func(abs, rel string) error) error {
	ig := loadIgnore(w.root)
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			// An unreadable directory is skipped rather than failing the whole
			// search; the start itself failing is reported.
			if p == start {
				return err
			}
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel := w.Rel(p)
		if p != start && ig.ignored(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
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
			return fn(p, rel)
		}
		return nil
	})
}

// Glob returns the workspace-relative paths of the files matching pattern,
// sorted. "**" matches any number of directories; directories named in the
// top-level .gitignore, .git, node_modules, vendor and similar are skipped.
// Only files are returned. The pattern must stay inside the workspace.
func (w *Workspace) Glob(ctx context.Context, pattern string) ([]string, error) {
	rel, err := w.relPattern(pattern)
	if err != nil {
		return nil, err
	}
	g, err := compileGlob(rel)
	if err != nil {
		return nil, err
	}
	if len(g.segs) == 0 {
		return nil, fmt.Errorf("glob pattern %q matches no files: give a pattern such as \"**/*.go\"", pattern)
	}
	prefix := g.literalPrefix()
	start, err := w.Resolve(filepath.Join(append([]string{"."}, prefix...)...))
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
	rest := globPattern{segs: g.segs[len(prefix):]}
	if !fi.IsDir() {
		if len(rest.segs) == 0 {
			return []string{w.Rel(start)}, nil
		}
		return nil, nil
	}
	var out []string
	err = w.walkFiles(ctx, start, func(abs, relPath string) error {
		// The rest of the pattern is matched below the literal prefix, which
		// may have been reached through a symlink inside the workspace.
		below, err := filepath.Rel(start, filepath.Join(w.root, filepath.FromSlash(relPath)))
		if err == nil && rest.match(filepath.ToSlash(below)) {
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
