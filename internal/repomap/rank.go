package repomap

import (
	"math"
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

// key identifies the boost in the cache: a stored rank is valid only for
// the words it was computed with.
func (b boost) key() string {
	words := make([]string, 0, len(b.words))
	for w := range b.words {
		words = append(words, w)
	}
	sort.Strings(words)
	return "v1\x00" + strings.Join(words, "\x00")
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

// computeRank runs PageRank over the reference graph: an edge from file A to
// file B for every identifier A mentions that B defines, weighted by
// identWeight and the square root of the number of mentions (references
// from boosted files ×50, as Aider weighs the files in the chat). The
// teleport (personalisation) vector favours boosted files. Files get their
// PageRank; each symbol gets the rank flowing into its file through its name.
//
// Edges are never materialised: all definers of an identifier receive the
// same flow, so one pass over the references per iteration computes the
// flow into each identifier and a second hands it to its definers. That
// keeps a repository like the Go standard library, where "String" has
// hundreds of definers and thousands of referrers, linear in its size.
func computeRank(files []*fileData, b boost) {
	n := len(files)
	if n == 0 {
		return
	}
	ids := map[string]int32{}
	var definers [][]int32
	for fi, f := range files {
		for _, s := range f.syms {
			if s.Kind == KindImpl {
				continue
			}
			key := scopedName(f, s.Name)
			id, ok := ids[key]
			if !ok {
				id = int32(len(definers))
				ids[key] = id
				definers = append(definers, nil)
			}
			if d := definers[id]; len(d) == 0 || d[len(d)-1] != int32(fi) {
				definers[id] = append(d, int32(fi))
			}
		}
	}
	boosted := make([]bool, n)
	nBoosted := 0
	for i, f := range files {
		if b.file(f.rel) {
			boosted[i] = true
			nBoosted++
		}
	}
	type edge struct {
		src, id int32
		w       float64
	}
	var edges []edge
	outW := make([]float64, n)
	for r, f := range files {
		for _, rc := range f.refs {
			id, ok := ids[scopedName(f, rc.name)]
			if !ok || containsSorted(definers[id], int32(r)) {
				continue
			}
			w := identWeight(rc.name, len(definers[id]), b) * math.Sqrt(float64(rc.n))
			if boosted[r] {
				w *= 50
			}
			edges = append(edges, edge{int32(r), id, w})
			outW[r] += w * float64(len(definers[id]))
		}
	}
	for i := range edges {
		edges[i].w /= outW[edges[i].src]
	}

	p := make([]float64, n)
	for i := range p {
		p[i] = 1 / float64(n)
		if nBoosted > 0 {
			p[i] *= 0.1
			if boosted[i] {
				p[i] += 0.9 / float64(nBoosted)
			}
		}
	}
	rank := append([]float64(nil), p...)
	next := make([]float64, n)
	flow := make([]float64, len(definers))
	spread := func() {
		clear(flow)
		for _, e := range edges {
			flow[e.id] += rank[e.src] * e.w
		}
	}
	for iter := 0; iter < maxIterations; iter++ {
		spread()
		dangling := 0.0
		for r := range rank {
			if outW[r] == 0 {
				dangling += rank[r]
			}
		}
		for d := range next {
			next[d] = (1 - damping + damping*dangling) * p[d]
		}
		for id, defs := range definers {
			if flow[id] == 0 {
				continue
			}
			for _, d := range defs {
				next[d] += damping * flow[id]
			}
		}
		diff := 0.0
		for i := range rank {
			diff += math.Abs(next[i] - rank[i])
		}
		rank, next = next, rank
		if diff < float64(n)*tolerance {
			break
		}
	}
	spread()
	for fi, f := range files {
		f.rank = rank[fi]
		for si := range f.syms {
			s := &f.syms[si]
			s.Rank = 0
			if id, ok := ids[scopedName(f, s.Name)]; ok && s.Kind != KindImpl {
				s.Rank = flow[id]
			}
		}
	}
}

// scopedName is the key under which a name is defined or referenced. In Go
// an unexported name (and a predeclared one such as int or len) can only
// refer to something in the same package, so it is qualified with the
// package directory; exported names and other languages' names are global.
func scopedName(f *fileData, name string) string {
	if f.lang == "go" && name != "" && !(name[0] >= 'A' && name[0] <= 'Z') {
		return path.Dir(f.rel) + "\x00" + name
	}
	return name
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
