package tools

import (
	"fmt"
	"path"
	"strings"
)

// globPattern is a slash-separated pattern in which "**" as a whole segment
// matches zero or more path segments and every other segment follows
// path.Match.
type globPattern struct {
	segs []string
}

func compileGlob(pattern string) (globPattern, error) {
	p := strings.Trim(pattern, "/")
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." {
			continue
		}
		// Consecutive ** are one; keeping them only slows matching down.
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return globPattern{}, fmt.Errorf("bad glob pattern %q: segment %q is malformed (check [ ] and \\ escapes)", pattern, s)
		}
		segs = append(segs, s)
	}
	return globPattern{segs: segs}, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g globPattern) match(rel string) bool {
	return matchSegments(g.segs, strings.Split(rel, "/"))
}

// literalPrefix is the leading segments without wildcards: the directory a
// search can start from instead of the workspace root.
func (g globPattern) literalPrefix() []string {
	for i, s := range g.segs {
		if hasMeta(s) {
			return g.segs[:i]
		}
	}
	return g.segs
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
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
