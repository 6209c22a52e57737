package filetree

import (
	"bufio"
	"os"
	"path"
	"strings"
)

// rule is one line of a .gitignore, .git/info/exclude or Options.Exclude,
// with git's semantics: comments and blank lines are skipped; "!" negates;
// a trailing "/" matches directories only; a slash at the start or in the
// middle anchors the pattern to the directory of its file, otherwise it
// matches a name at any depth below it; "*", "?" and "[...]" match within
// one path segment and a "**" segment matches any number of them.
type rule struct {
	base     string   // directory of the file, relative to the root ("" for the root)
	segs     []string // pattern split at "/"
	anchored bool
	dirOnly  bool
	negate   bool
}

// readRules parses a file of patterns that apply below base. A missing or
// unreadable file has no rules: ignoring only saves work and noise, it
// never protects anything.
func readRules(file, base string) []rule {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var rules []rule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, ok := parseRule(sc.Text(), base); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

func parseRule(line, base string) (rule, bool) {
	line = strings.TrimRight(line, "\r")
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRight(line, " \t")
	}
	if line == "" || line[0] == '#' {
		return rule{}, false
	}
	r := rule{base: base}
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
		return rule{}, false
	}
	for _, s := range strings.Split(line, "/") {
		if _, err := path.Match(s, ""); err != nil {
			return rule{}, false // git ignores a malformed pattern too
		}
	}
	r.segs = strings.Split(line, "/")
	return r, true
}

// match applies rules to the root-relative slash path rel: the last rule
// that matches decides, and none matching means not ignored.
func match(rules []rule, rel string, isDir bool) bool {
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

// matchSegs matches path segments against pattern segments. A "**"
// segment stands for any number of segments, except at the end, where it
// needs at least one: "dir/**" is what is inside dir, not dir itself.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(name) > 0
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
