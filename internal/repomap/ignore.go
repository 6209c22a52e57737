package repomap

import (
	"bufio"
	"os"
	"path"
	"strings"
)

// ignoreRule is one .gitignore line. Supported: comments, blank lines,
// negation (!), directory-only patterns (dir/), anchoring (a slash at the
// start or in the middle), wildcards and "**" segments; rules of nested
// .gitignore files apply below their directory, and the last match wins.
type ignoreRule struct {
	base     string   // directory of the .gitignore, relative to the root ("" for the root)
	segs     []string // pattern split at "/"
	anchored bool
	dirOnly  bool
	negate   bool
}

// readIgnoreFile parses a .gitignore (or .git/info/exclude) whose rules
// apply below base. A missing or unreadable file has no rules: ignoring
// only saves work, it never protects anything.
func readIgnoreFile(file, base string) []ignoreRule {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var rules []ignoreRule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text(), base); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

func parseIgnoreLine(line, base string) (ignoreRule, bool) {
	line = strings.TrimRight(line, "\r")
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRight(line, " \t")
	}
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	r := ignoreRule{base: base}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if line[0] == '\\' {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	r.anchored = strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return ignoreRule{}, false
	}
	r.segs = strings.Split(line, "/")
	return r, true
}

// ignored reports whether the root-relative slash path rel is ignored by
// rules; the last rule that matches decides.
func ignored(rules []ignoreRule, rel string, isDir bool) bool {
	out := false
	for i := range rules {
		r := &rules[i]
		if r.dirOnly && !isDir || out == !r.negate {
			continue
		}
		sub := rel
		if r.base != "" {
			if !strings.HasPrefix(rel, r.base+"/") {
				continue
			}
			sub = rel[len(r.base)+1:]
		}
		var ok bool
		if r.anchored {
			ok = matchSegs(r.segs, strings.Split(sub, "/"))
		} else {
			ok, _ = path.Match(r.segs[0], path.Base(sub))
		}
		if ok {
			out = !r.negate
		}
	}
	return out
}

// matchSegs matches path segments against pattern segments, "**" standing
// for any number of segments.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
