package repomap

import (
	"path"
	"sort"
	"strings"
	"unicode"
)

// identCount is one identifier a file mentions and how often.
type identCount struct {
	name string
	n    int32
}

// countRefs turns identifiers with repetitions into sorted counts.
func countRefs(refs []string) []identCount {
	counts := make(map[string]int32, len(refs)/2)
	for _, r := range refs {
		counts[r]++
	}
	out := make([]identCount, 0, len(counts))
	for name, n := range counts {
		out = append(out, identCount{name, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

const (
	damping       = 0.85
	maxIterations = 100
	tolerance     = 1e-6
)

// boost is what the goal mentions: words that may name files or identifiers.
type boost struct {
	words map[string]bool
}

// boostWords splits paths, identifiers or free text (a goal) into words:
// "@file:client.go" and "@internal/llm" count as the path they name.
func boostWords(items []string) boost {
	b := boost{words: map[string]bool{}}
	for _, item := range items {
		for _, w := range strings.FieldsFunc(item, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune("\"'`,;()[]{}<>|", r)
		}) {
			w = strings.TrimPrefix(w, "@")
			w = strings.TrimPrefix(w, "file:")
			w = strings.TrimPrefix(w, "./")
			w = strings.TrimRight(w, ".:?!")
			if w != "" {
				b.words[w] = true
			}
		}
	}
	return b
}

// file reports whether a word of the goal names the file: its path, a
// trailing part of it, its name with or without extension, or its directory.
func (b boost) file(rel string) bool {
	if len(b.words) == 0 {
		return false
	}
	base := path.Base(rel)
	stem := strings.TrimSuffix(base, path.Ext(base))
	if b.words[rel] || b.words[base] || len(stem) >= 3 && b.words[stem] {
		return true
	}
	if dir := path.Dir(rel); dir != "." && (b.words[dir] || len(path.Base(dir)) >= 3 && b.words[path.Base(dir)]) {
		return true
	}
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && b.words[rel[i+1:]] {
			return true
		}
	}
	return false
}

// identWeight weighs a reference to name the way Aider does: identifiers the
// goal mentions and long, specific names (snake_case, camelCase, ≥ 8
// characters) count more; private (_x) names and names defined in many
// files (String, Close) count less.
func identWeight(name string, definers int, b boost) float64 {
	w := 1.0
	if b.words[name] {
		w *= 10
	}
	if len(name) >= 8 && (strings.ContainsAny(name, "_-") || hasUpperAndLower(name)) {
		w *= 10
	}
	if strings.HasPrefix(name, "_") {
		w *= 0.1
	}
	if definers > 5 {
		w *= 0.1
	}
	return w
}

func hasUpperAndLower(s string) bool {
	upper, lower := false, false
	for i := 0; i < len(s); i++ {
		upper = upper || s[i] >= 'A' && s[i] <= 'Z'
		lower = lower || s[i] >= 'a' && s[i] <= 'z'
	}
	return upper && lower
}

func containsSorted(s []int32, v int32) bool {
	if len(s) < 16 {
		for _, x := range s {
			if x == v {
				return true
			}
		}
		return false
	}
	i := sort.Search(len(s), func(i int) bool { return s[i] >= v })
	return i < len(s) && s[i] == v
}
