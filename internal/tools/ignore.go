package tools

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// isSkippedDir names directories that are never searched: version control
// data, dependency trees and caches are large and almost never what the
// model is looking for.
func isSkippedDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn",
		"node_modules", "vendor", "bower_components",
		".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".pytest_cache",
		".gradle", ".next":
		return true
	}
	return false
}

// ignoreRule is one line of a .gitignore, in the simple forms supported:
// plain names and wildcards ("*.log", "build"), directory-only ("dist/"),
// anchored to the root ("/out", "docs/*.tmp") and "**" segments. Negation
// ("!keep.log") is not supported; such lines are skipped.
type ignoreRule struct {
	glob     globPattern
	anchored bool // matched against the whole relative path, not the name
	dirOnly  bool
}

// ignoreRules are the workspace's top-level .gitignore plus isSkippedDir.
type ignoreRules struct {
	rules []ignoreRule
}

// loadIgnore reads root/.gitignore; a missing or unreadable file means
// no rules beyond isSkippedDir, since ignoring is only an optimisation.
func loadIgnore(root string) *ignoreRules {
	ig := &ignoreRules{}
	f, err := os.Open(filepath.Join(root, ".gitignore"))
	if err != nil {
		return ig
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			ig.rules = append(ig.rules, r)
		}
	}
	return ig
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimRight(line, " \t\r")
	if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
		return ignoreRule{}, false
	}
	var r ignoreRule
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	// As in git, a slash at the start or in the middle anchors the pattern.
	r.anchored = strings.Contains(line, "/")
	g, err := compileGlob(line)
	if err != nil || len(g.segs) == 0 {
		return ignoreRule{}, false
	}
	r.glob = g
	return r, true
}

// ignored reports whether the workspace-relative slash path rel is skipped.
func (ig *ignoreRules) ignored(rel string, isDir bool) bool {
	name := path.Base(rel)
	if isDir && isSkippedDir(name) {
		return true
	}
	for _, r := range ig.rules {
		if r.dirOnly && !isDir {
			continue
		}
		if r.anchored {
			if r.glob.match(rel) {
				return true
			}
		} else if ok, _ := path.Match(r.glob.segs[0], name); ok {
			return true
		}
	}
	return false
}
