package repomap

import (
	"math"
	"path"
	"strings"
)

// graph is the reference graph of the mapped files, independent of any
// boost, so the cache can keep it and a new boost only re-runs PageRank
// over it. Files are the live (not skipped) files in path order; an edge
// runs from a file to an identifier it mentions (with the number of
// mentions), and each identifier to the files defining it. Edges to all
// definers of an identifier are never materialised: they all receive the
// same flow, so a repository like the Go standard library, where String
// has hundreds of definers and thousands of referrers, stays linear.
type graph struct {
	names     []string // identifier id → its bare name (for weights and boosts)
	defStart  []int32  // definers of id: defFile[defStart[id]:defStart[id+1]]
	defFile   []int32
	edgeStart []int32 // edges of file f: edgeStart[f]:edgeStart[f+1]
	edgeID    []int32
	edgeN     []int32 // mentions
	symID     []int32 // every live file's symbols in order → identifier id, or -1
}

func (g *graph) definers(id int32) []int32 { return g.defFile[g.defStart[id]:g.defStart[id+1]] }

// defKey is the key under which s is defined. In Go a package-level name
// is the package directory's (only pkg.Name, or Name inside the package,
// can refer to it), and so is an unexported method; an exported method can
// be called on a value from anywhere, so it is keyed by its bare name, as
// are all names in other languages.
func defKey(f *fileData, s *Symbol) string {
	if f.lang != "go" || s.Kind == KindMethod && exported(s.Name) {
		return s.Name
	}
	return path.Dir(f.rel) + "\x00" + s.Name
}

// refKey is the key a reference (as goRefs records them for Go) refers to,
// or "" for a package outside the repository.
func refKey(f *fileData, name string, goDir func(importPath string) string) string {
	if f.lang != "go" {
		return name
	}
	if i := strings.IndexByte(name, 0); i >= 0 {
		dir := goDir(name[:i])
		if dir == "" {
			return ""
		}
		return dir + "\x00" + name[i+1:]
	}
	if sel, ok := strings.CutPrefix(name, "."); ok {
		if exported(sel) {
			return sel
		}
		name = sel
	}
	return path.Dir(f.rel) + "\x00" + name
}

func exported(name string) bool { return name != "" && name[0] >= 'A' && name[0] <= 'Z' }

// buildGraph links the live files' references to their definitions. goDir
// maps a Go import path to its package directory ("" outside the repository).
func buildGraph(live []*fileData, goDir func(string) string) (*graph, error) {
	g := &graph{}
	ids := map[string]int32{}
	var defs [][]int32
	for fi, f := range live {
		for si := range f.syms {
			s := &f.syms[si]
			if s.Kind == KindImpl {
				g.symID = append(g.symID, -1)
				continue
			}
			key := defKey(f, s)
			id, ok := ids[key]
			if !ok {
				id = int32(len(defs))
				ids[key] = id
				defs = append(defs, nil)
				g.names = append(g.names, s.Name)
			}
			if d := defs[id]; len(d) == 0 || d[len(d)-1] != int32(fi) {
				defs[id] = append(d, int32(fi))
			}
			g.symID = append(g.symID, id)
		}
	}
	g.defStart = make([]int32, len(defs)+1)
	for id, d := range defs {
		g.defStart[id+1] = g.defStart[id] + int32(len(d))
		g.defFile = append(g.defFile, d...)
	}
	memo := map[string]string{}
	cachedDir := func(imp string) string {
		d, ok := memo[imp]
		if !ok {
			d = goDir(imp)
			memo[imp] = d
		}
		return d
	}
	g.edgeStart = make([]int32, len(live)+1)
	for fi, f := range live {
		refs, err := decodeRefs(f.refsBlob)
		if err != nil {
			return nil, err
		}
		for _, rc := range refs {
			key := refKey(f, rc.name, cachedDir)
			id, ok := ids[key]
			if !ok || key == "" || containsSorted(defs[id], int32(fi)) {
				continue
			}
			g.edgeID = append(g.edgeID, id)
			g.edgeN = append(g.edgeN, rc.n)
		}
		g.edgeStart[fi+1] = int32(len(g.edgeID))
	}
	return g, nil
}

// rank runs PageRank over g and stores each live file's rank and each
// symbol's (the rank flowing into its file through its name). Edges are
// weighted as Aider weighs them: identWeight × √mentions, ×50 from boosted
// files; the teleport (personalisation) vector puts 90% of its mass on the
// boosted files, so a boost is a personalisation of the same graph.
func (g *graph) rank(live []*fileData, b boost) {
	n := len(live)
	if n == 0 {
		return
	}
	boosted := make([]bool, n)
	nBoosted := 0
	for i, f := range live {
		if b.file(f.rel) {
			boosted[i] = true
			nBoosted++
		}
	}
	nameW := make([]float64, len(g.names))
	for id, name := range g.names {
		nameW[id] = identWeight(name, len(g.definers(int32(id))), b)
	}
	w := make([]float64, len(g.edgeID))
	outW := make([]float64, n)
	for src := range n {
		for e := g.edgeStart[src]; e < g.edgeStart[src+1]; e++ {
			id := g.edgeID[e]
			w[e] = nameW[id] * math.Sqrt(float64(g.edgeN[e]))
			if boosted[src] {
				w[e] *= 50
			}
			outW[src] += w[e] * float64(g.defStart[id+1]-g.defStart[id])
		}
		for e := g.edgeStart[src]; e < g.edgeStart[src+1]; e++ {
			w[e] /= outW[src]
		}
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
	flow := make([]float64, len(g.names))
	spread := func() {
		clear(flow)
		for src := range n {
			r := rank[src]
			for e := g.edgeStart[src]; e < g.edgeStart[src+1]; e++ {
				flow[g.edgeID[e]] += r * w[e]
			}
		}
	}
	for range maxIterations {
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
		for id, f := range flow {
			if f == 0 {
				continue
			}
			for _, d := range g.definers(int32(id)) {
				next[d] += damping * f
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
	k := 0
	for fi, f := range live {
		f.rank = rank[fi]
		for si := range f.syms {
			f.syms[si].Rank = 0
			if id := g.symID[k]; id >= 0 {
				f.syms[si].Rank = flow[id]
			}
			k++
		}
	}
}
