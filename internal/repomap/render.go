package repomap

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// renderSigMax caps one rendered signature; the full one stays in Symbol.
const renderSigMax = 160

// EstimateTokens is the token estimate used for budgets: characters / 4,
// rounded up (about 4% low for Go code; good enough for a budget).
func EstimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// item is one candidate line of the map: a symbol, or a file without
// symbols (sym == -1).
type item struct {
	file, sym int
	rank      float64
	line      int
}

// better orders candidates: higher symbol rank, then the file's place in the
// ranked list, then position in the file. Symbol-less files come last.
func better(a, b item) bool {
	if (a.sym < 0) != (b.sym < 0) {
		return a.sym >= 0
	}
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	if a.file != b.file {
		return a.file < b.file
	}
	return a.line < b.line
}

// Render lays out files (in the order given, most important first) as an
// outline within tokens (see EstimateTokens): each file as "path:" with its
// most important symbols' signatures indented below, the symbols enclosing
// them for context, and "⋮" where symbols were left out. It includes as
// many of the highest-ranked symbols as fit.
func Render(files []File, tokens int) string {
	if tokens <= 0 || len(files) == 0 {
		return ""
	}
	top := topItems(files, tokens+1)
	lo, hi := 0, len(top)
	best := ""
	for lo <= hi { // largest prefix of top whose rendering fits
		mid := (lo + hi) / 2
		text := renderItems(files, top[:mid])
		if EstimateTokens(text) <= tokens {
			best = text
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// topItems returns the k best candidates, best first, without sorting all
// of them (a repository can have hundreds of thousands of symbols).
func topItems(files []File, k int) []item {
	h := make([]item, 0, k) // min-heap on "better": h[0] is the worst kept
	less := func(i, j int) bool { return better(h[j], h[i]) }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(r, l) {
				m = r
			}
			if !less(m, i) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	up := func(i int) {
		for i > 0 {
			p := (i - 1) / 2
			if !less(i, p) {
				return
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	push := func(it item) {
		if len(h) < k {
			h = append(h, it)
			up(len(h) - 1)
		} else if better(it, h[0]) {
			h[0] = it
			down(0)
		}
	}
	for fi, f := range files {
		if len(f.Symbols) == 0 {
			push(item{file: fi, sym: -1})
			continue
		}
		for si, s := range f.Symbols {
			push(item{file: fi, sym: si, rank: s.Rank, line: s.StartLine})
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	return h
}

func renderItems(files []File, items []item) string {
	if len(items) == 0 {
		return ""
	}
	chosen := map[int][]int{}
	var order []int
	for _, it := range items {
		if _, ok := chosen[it.file]; !ok {
			order = append(order, it.file)
		}
		if it.sym >= 0 {
			chosen[it.file] = append(chosen[it.file], it.sym)
		} else if chosen[it.file] == nil {
			chosen[it.file] = []int{}
		}
	}
	sort.Ints(order)
	var b strings.Builder
	for _, fi := range order {
		renderFile(&b, files[fi], chosen[fi])
	}
	return b.String()
}

// renderFile writes one file's outline: the chosen symbols plus the symbols
// that enclose them, in source order, indented by nesting depth.
func renderFile(b *strings.Builder, f File, chosen []int) {
	if len(chosen) == 0 {
		b.WriteString(f.Path)
		b.WriteByte('\n')
		return
	}
	syms := f.Symbols
	parent, depth := nesting(syms)
	show := make(map[int]bool, len(chosen)*2)
	for _, si := range chosen {
		for p := si; p >= 0 && !show[p]; p = parent[p] {
			show[p] = true
		}
	}
	b.WriteString(f.Path)
	b.WriteString(":\n")
	last := -1
	for si := range syms {
		if !show[si] {
			continue
		}
		if si != last+1 {
			b.WriteString("⋮\n")
		}
		for range depth[si] + 1 {
			b.WriteString("  ")
		}
		sig := syms[si].Signature
		if sig == "" {
			sig = syms[si].Name
		}
		if len(sig) > renderSigMax {
			n := renderSigMax
			for n > 0 && !utf8.RuneStart(sig[n]) {
				n--
			}
			sig = sig[:n] + "…"
		}
		b.WriteString(sig)
		b.WriteByte('\n')
		last = si
	}
	if last < len(syms)-1 {
		b.WriteString("⋮\n")
	}
}

// nesting finds each symbol's innermost enclosing symbol (-1 for none) and
// its depth, from the line ranges of symbols sorted by position.
func nesting(syms []Symbol) (parent, depth []int) {
	parent = make([]int, len(syms))
	depth = make([]int, len(syms))
	var stack []int
	for i, s := range syms {
		for len(stack) > 0 {
			top := syms[stack[len(stack)-1]]
			encloses := top.StartLine <= s.StartLine && s.EndLine <= top.EndLine &&
				(top.StartLine < s.StartLine || s.EndLine < top.EndLine)
			if encloses {
				break
			}
			stack = stack[:len(stack)-1]
		}
		parent[i] = -1
		if len(stack) > 0 {
			parent[i] = stack[len(stack)-1]
		}
		depth[i] = len(stack)
		stack = append(stack, i)
	}
	return parent, depth
}
