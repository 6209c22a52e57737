// Package filetree is the one policy for which files of a workspace the
// programs look at: the coding tools (glob, grep, list_dir), the repo map
// and the planner's view of the workspace all walk through it, so they
// agree about the same tree.
//
// A path is hidden when git would ignore it — .gitignore files at every
// level, with negation, directory-only and anchored patterns and "**",
// and .git/info/exclude — when it is a directory that is never the
// project's own source (version control data, dependency trees,
// virtualenvs, caches: see skippedDir), or when the caller's extra
// patterns (Options.Exclude) say so. The user's global excludes file
// (core.excludesFile) is not read: it describes one person's machine,
// not the project.
package filetree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// skippedDir names directories that are never walked: version control
// data, dependency trees, virtualenvs and caches are large, and almost
// never what a person or a model is looking for.
func skippedDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn",
		"node_modules", "vendor", "bower_components", "site-packages",
		".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".pytest_cache",
		".gradle", ".next":
		return true
	}
	return false
}

// Options adds to the policy.
type Options struct {
	// Exclude are extra patterns in .gitignore syntax, relative to the
	// root, such as "volumes/" to keep a run's own files out of sight.
	// They hide what they match whatever the repository's files say.
	Exclude []string
}

// Tree is the policy for one root. It reads .gitignore files as it goes,
// so it sees the tree as it is at each walk; it is safe for concurrent use.
type Tree struct {
	root  string
	extra []rule // Options.Exclude
}

// New returns the policy for the directory root.
func New(root string, o Options) *Tree {
	t := &Tree{root: root}
	for _, p := range o.Exclude {
		if r, ok := parseRule(p, ""); ok {
			t.extra = append(t.extra, r)
		}
	}
	return t
}

// Root is the directory the tree describes.
func (t *Tree) Root() string { return t.root }

// Ignored reports whether the policy hides the root-relative slash path
// rel, or one of the directories above it.
func (t *Tree) Ignored(rel string, isDir bool) bool {
	rel = clean(rel)
	if rel == "" {
		return false
	}
	rules := t.baseRules()
	parts := strings.Split(rel, "/")
	for i := range parts {
		dir := strings.Join(parts[:i], "/")
		rules = t.withDirRules(rules, dir)
		last := i == len(parts)-1
		if t.hidden(rules, strings.Join(parts[:i+1], "/"), parts[i], !last || isDir) {
			return true
		}
	}
	return false
}

// Walk calls fn for every entry below start (a root-relative slash path;
// "" is the root) that the policy keeps, depth first in lexical order, a
// directory before what it holds. start itself is walked even when the
// policy hides it: a caller who names a directory means it. fn returning
// fs.SkipDir skips a directory's contents (or, from a file, the rest of its
// directory); fs.SkipAll ends the walk without error. Symlinks are reported
// as they are, never followed. Directories below start that cannot be read
// are skipped; start itself failing is an error.
func (t *Tree) Walk(ctx context.Context, start string, fn func(rel string, d fs.DirEntry) error) error {
	start = clean(start)
	rules := t.baseRules()
	if start != "" {
		parts := strings.Split(start, "/")
		for i := range parts {
			rules = t.withDirRules(rules, strings.Join(parts[:i], "/"))
		}
	}
	abs := filepath.Join(t.root, filepath.FromSlash(start))
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("list %s: %w", abs, err)
	}
	err = t.walkDir(ctx, start, entries, rules, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (t *Tree) walkDir(ctx context.Context, rel string, entries []fs.DirEntry, rules []rule, fn func(string, fs.DirEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			rules = t.withDirRules(rules, rel)
			break
		}
	}
	for _, e := range entries {
		childRel := join(rel, e.Name())
		if t.hidden(rules, childRel, e.Name(), e.IsDir()) {
			continue
		}
		err := fn(childRel, e)
		if errors.Is(err, fs.SkipDir) {
			if e.IsDir() {
				continue
			}
			return nil
		}
		if err != nil {
			return err
		}
		if !e.IsDir() {
			continue
		}
		children, err := os.ReadDir(filepath.Join(t.root, filepath.FromSlash(childRel)))
		if err != nil {
			continue // unreadable: the rest of the tree is still worth walking
		}
		if err := t.walkDir(ctx, childRel, children, rules, fn); err != nil {
			return err
		}
	}
	return nil
}

// baseRules are those of .git/info/exclude, which every .gitignore
// overrides. They are read at each walk, as the .gitignore files are.
func (t *Tree) baseRules() []rule {
	return readRules(filepath.Join(t.root, ".git", "info", "exclude"), "")
}

// withDirRules adds the rules of dir's .gitignore, without touching the
// caller's slice (sibling directories share its prefix).
func (t *Tree) withDirRules(rules []rule, dir string) []rule {
	more := readRules(filepath.Join(t.root, filepath.FromSlash(dir), ".gitignore"), dir)
	if len(more) == 0 {
		return rules
	}
	return append(rules[:len(rules):len(rules)], more...)
}

func (t *Tree) hidden(rules []rule, rel, name string, isDir bool) bool {
	return isDir && skippedDir(name) || match(rules, rel, isDir) || match(t.extra, rel, isDir)
}

// clean turns a root-relative path into the form rules match: slashes,
// no leading "./" or "/", "" for the root.
func clean(rel string) string {
	rel = path.Clean("/" + filepath.ToSlash(rel))
	return strings.TrimPrefix(rel, "/")
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
