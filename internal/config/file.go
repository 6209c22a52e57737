package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// applyFile walks the YAML as a node tree rather than decoding into a struct,
// because only the tree knows line numbers, and every unknown key or wrong
// type must be reported with the line the user has to fix.
func (st *state) applyFile(data []byte, path, abs string) {
	fail := func(line int, key, format string, args ...any) {
		st.errs = append(st.errs, &Error{Where: fmt.Sprintf("%s:%d", path, line), Key: key, Msg: fmt.Sprintf(format, args...)})
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return // an empty file sets nothing
		}
		st.errs = append(st.errs, &Error{Where: path, Msg: "not valid YAML", Err: err})
		return
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		fail(extra.Line, "", "a second YAML document (after ---) is not supported: keep all keys in one mapping")
		return
	}

	if len(doc.Content) == 0 {
		return
	}
	top := resolve(doc.Content[0])
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		return // only comments or a bare "---"
	}
	if top.Kind != yaml.MappingNode {
		// Never echo a top-level scalar: a pasted "OPENAI_API_KEY=sk-..." line
		// would put the key into the error message.
		what := describe(top)
		if top.Kind == yaml.ScalarNode {
			what = "a single value"
		}
		fail(top.Line, "", "the top level must be a mapping of key: value, got %s", what)
		return
	}

	known := make(map[string]field)
	for _, f := range fields() {
		known[f.key] = f
	}
	seen := make(map[string]int)
	dir := filepath.Dir(abs)
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], resolve(top.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			fail(k.Line, "", "keys must be plain names, got %s", describe(k))
			continue
		}
		// Structured keys are parsed by their own files (prices.go,
		// notify.go, compat.go, mcp.go); the rest by the field table.
		o := origin{kind: fromFile, name: path, abs: abs, line: k.Line}
		structured := map[string]func(){
			keyPrices:      func() { st.applyPricesNode(v, o) },
			keyNotify:      func() { st.applyNotifyNode(v, o) },
			keyCompat:      func() { st.applyCompatNode(v, o) },
			keyMCPServers:  func() { st.applyMCPNode(k, v, path, abs) },
			keyMCPReadOnly: func() { st.applyMCPNode(k, v, path, abs) },
		}
		if apply, ok := structured[k.Value]; ok {
			if first, dup := seen[k.Value]; dup {
				fail(k.Line, k.Value, "set twice (first at line %d): keep one", first)
				continue
			}
			seen[k.Value] = k.Line
			apply()
			continue
		}
		f, ok := known[k.Value]
		if !ok {
			fail(k.Line, "", "unknown key %q (known: %s%s)", k.Value, strings.Join(Keys(), ", "), suggest(k.Value))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			fail(k.Line, k.Value, "set twice (first at line %d): keep one", first)
			continue
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // "key:" with no value leaves the default in place
		}
		if _, list := f.ptr(&st.cfg).(*[]string); list && v.Kind == yaml.SequenceNode {
			var items []string
			if err := v.Decode(&items); err != nil {
				fail(k.Line, k.Value, "want a list of strings, got %s", describe(v))
				continue
			}
			st.setList(f, items, origin{kind: fromFile, name: path, abs: abs, line: k.Line})
			continue
		}
		if v.Kind != yaml.ScalarNode {
			fail(k.Line, k.Value, "want a single value, got %s", describe(v))
			continue
		}
		raw := v.Value
		if (f.key == "volumes_dir" || f.key == "workspace_dir") && raw != "" && !filepath.IsAbs(raw) {
			// Like compose, paths in a file are relative to that file, so the
			// same file works whatever directory the program is started from.
			raw = filepath.Join(dir, raw)
		}
		st.set(f, raw, origin{kind: fromFile, name: path, abs: abs, line: k.Line})
	}
}

// resolve follows aliases so "*anchor" values are checked like literals.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// suggest names the closest known key, or the key a flag name belongs to
// (people copy "volumes" from --volumes into the file).
func suggest(unknown string) string {
	norm := strings.ReplaceAll(strings.ToLower(unknown), "-", "_")
	var keys []string
	for _, f := range fields() {
		if norm == f.key || norm == strings.ReplaceAll(f.flag, "-", "_") {
			return fmt.Sprintf("; did you mean %q?", f.key)
		}
		keys = append(keys, f.key)
	}
	best := Nearest(norm, keys)
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// Nearest is the name among names that word most likely misspells: the
// closest at most two edits away (the first of equals), or "" when none is.
// Unknown keys and unknown flags get their suggestion from it.
func Nearest(word string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := distance(word, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// applyMCPNode parses mcp_servers or mcp_read_only, whose values are not
// single scalars.
func (st *state) applyMCPNode(k, v *yaml.Node, path, abs string) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	at := func(line int) origin { return origin{kind: fromFile, name: path, abs: abs, line: line} }
	if k.Value == keyMCPReadOnly {
		st.applyMCPReadOnlyNode(v, at(k.Line).where(), at(k.Line))
		return
	}
	st.applyMCPServersNode(v, func(line int) string { return at(line).where() }, func(int) origin { return at(k.Line) })
}
