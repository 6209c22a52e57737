package repomap

import (
	"sort"
	"strings"
)

// Python: classes (nested ones too), functions, methods, module-level
// assignments and imports. The lexer turns the file into logical lines
// (brackets and backslashes join physical lines) with their indentation;
// blocks are then found from the indentation, as Python itself does.

type pyFrame struct {
	indent int
	sym    int  // index of the symbol this block belongs to, or -1
	ctx    byte // what the block's lines are: 'm' module level, 'c' class body, 'd' function body
}

func parsePython(src string) parsed {
	lx := lexPython(src)
	var p parsed
	var stack []pyFrame
	decorator := -1 // index of the first decorator line before a def/class
	prevEnd := 0    // last line of the previous logical line
	closeFrames := func(indent int) {
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			if f := stack[len(stack)-1]; f.sym >= 0 {
				p.syms[f.sym].EndLine = max(prevEnd, p.syms[f.sym].StartLine)
			}
			stack = stack[:len(stack)-1]
		}
	}
	for li, l := range lx.lines {
		closeFrames(l.indent)
		ctx := byte('m')
		if len(stack) > 0 {
			ctx = stack[len(stack)-1].ctx
		}
		toks := l.toks
		head := toks[0].text
		if head == "async" && len(toks) > 1 {
			head = toks[1].text
		}
		switch {
		case head == "@" && toks[0].kind == tPunct:
			if decorator < 0 {
				decorator = li
			}
			prevEnd = l.endLine
			continue
		case head == "def" || head == "class":
			first := li
			if decorator >= 0 {
				first = decorator
			}
			frame := lx.pyDef(&p, li, first, ctx, prevEndBefore(lx.lines, first))
			if frame.indent >= 0 {
				frame.indent = l.indent
				stack = append(stack, frame)
			}
		case head == "import" || head == "from":
			p.imports = append(p.imports, pyImports(toks)...)
		case ctx == 'm' && len(toks) > 2 && toks[0].kind == tIdent && (toks[1].text == "=" || toks[1].text == ":"):
			lx.pyAssign(&p, l, prevEndBefore(lx.lines, li))
		}
		if head != "def" && head != "class" && toks[len(toks)-1].text == ":" {
			stack = append(stack, pyFrame{indent: l.indent, sym: -1, ctx: ctx})
		}
		decorator = -1
		prevEnd = l.endLine
	}
	closeFrames(-1)
	p.refs = make([]string, 0, 256)
	for _, l := range lx.lines {
		for _, t := range l.toks {
			if t.kind == tIdent && len(t.text) > 1 && len(t.text) <= maxIdentLen {
				p.refs = append(p.refs, t.text)
			}
		}
	}
	return p
}

func prevEndBefore(lines []pyLine, li int) int {
	if li > 0 {
		return lines[li-1].endLine
	}
	return 0
}

// pyDef records a def or class on line li (decorators from line first) and
// returns the frame for its body; indent -1 means the body was on the same
// line and there is no frame.
func (lx *pyLexer) pyDef(p *parsed, li, first int, ctx byte, prevCode int) pyFrame {
	l := lx.lines[li]
	toks := l.toks
	k := 0
	if toks[0].text == "async" {
		k = 1
	}
	isClass := toks[k].text == "class"
	if k+1 >= len(toks) || toks[k+1].kind != tIdent {
		return pyFrame{indent: -1}
	}
	name := toks[k+1].text
	colon := -1
	depth := 0
	for j := k + 2; j < len(toks); j++ {
		switch toks[j].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ":":
			if depth == 0 && toks[j].kind == tPunct {
				colon = j
			}
		}
		if colon >= 0 {
			break
		}
	}
	sigTo := len(toks)
	if colon >= 0 {
		sigTo = colon
	}
	body := byte('d')
	kind := KindFunc
	switch {
	case isClass:
		kind, body = KindType, 'c'
	case ctx == 'c':
		kind = KindMethod
	}
	if ctx == 'd' { // definitions inside functions are implementation detail
		if colon >= 0 && colon == len(toks)-1 {
			return pyFrame{sym: -1, ctx: 'd'}
		}
		return pyFrame{indent: -1}
	}
	sym := Symbol{
		Kind:      kind,
		Name:      name,
		Signature: pyJoin(toks[:sigTo]),
		StartLine: lx.lines[first].line,
		EndLine:   l.endLine,
	}
	inline := colon >= 0 && colon < len(toks)-1
	switch {
	case inline && toks[colon+1].kind == tString:
		sym.Doc = pyDocString(toks[colon+1].text)
	case !inline && li+1 < len(lx.lines) && lx.lines[li+1].indent > l.indent && lx.lines[li+1].toks[0].kind == tString:
		sym.Doc = pyDocString(lx.lines[li+1].toks[0].text)
	}
	if sym.Doc == "" {
		sym.Doc = lx.commentAbove(sym.StartLine, prevCode)
	}
	p.syms = append(p.syms, sym)
	if inline || colon < 0 {
		return pyFrame{indent: -1}
	}
	return pyFrame{sym: len(p.syms) - 1, ctx: body}
}

func (lx *pyLexer) pyAssign(p *parsed, l pyLine, prevCode int) {
	name := l.toks[0].text
	if strings.HasPrefix(name, "__") {
		return
	}
	kind := KindVar
	if isUpperName(name) {
		kind = KindConst
	}
	sig := pyJoin(l.toks)
	if l.endLine != l.line || len(sig) > 100 {
		eq := len(l.toks)
		for j, t := range l.toks {
			if t.text == "=" && t.kind == tPunct {
				eq = j
				break
			}
		}
		sig = pyJoin(l.toks[:eq])
	}
	p.syms = append(p.syms, Symbol{Kind: kind, Name: name, Signature: sig, StartLine: l.line, EndLine: l.endLine,
		Doc: lx.commentAbove(l.line, prevCode)})
}

// commentAbove returns the first line of the # comment block directly above
// line, if no code sits between them.
func (lx *pyLexer) commentAbove(line, prevCode int) string {
	k := sort.Search(len(lx.comments), func(k int) bool { return lx.comments[k].line >= line }) - 1
	if k < 0 || lx.comments[k].line != line-1 || lx.comments[k].line <= prevCode {
		return ""
	}
	for k > 0 && lx.comments[k-1].line == lx.comments[k].line-1 && lx.comments[k-1].line > prevCode {
		k--
	}
	return firstDocLine(lx.comments[k].text)
}

func pyDocString(s string) string {
	s = strings.TrimLeft(s, "rRuUbBfF")
	for _, q := range []string{`"""`, `'''`, `"`, `'`} {
		if strings.HasPrefix(s, q) {
			s = strings.TrimSuffix(strings.TrimPrefix(s, q), q)
			break
		}
	}
	for line := range strings.SplitSeq(s, "\n") {
		if l := strings.TrimSpace(line); l != "" {
			return capText(l)
		}
	}
	return ""
}

// pyJoin renders tokens as one line, one space where the source had space.
func pyJoin(toks []lexeme) string {
	if len(toks) == 0 {
		return ""
	}
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && t.off > toks[i-1].end() {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
		if b.Len() > maxSignature {
			break
		}
	}
	return collapse(b.String())
}

// pyImports returns the modules an import statement names: "import a.b, c"
// gives a.b and c; "from .m import x, y" gives .m, .m.x and .m.y (x may be
// a submodule; resolution keeps whichever exists).
func pyImports(toks []lexeme) []string {
	var out []string
	dotted := func(j int) (string, int) {
		var b strings.Builder
		for j < len(toks) {
			t := toks[j]
			if t.kind == tIdent && t.text != "import" && t.text != "as" || t.text == "." || t.text == "..." {
				b.WriteString(t.text)
				j++
				continue
			}
			break
		}
		return b.String(), j
	}
	if toks[0].text == "import" {
		for j := 1; j < len(toks); {
			name, next := dotted(j)
			if name != "" {
				out = append(out, name)
			}
			for next < len(toks) && toks[next].text != "," {
				next++
			}
			j = next + 1
		}
		return out
	}
	base, j := dotted(1)
	if base == "" || j >= len(toks) || toks[j].text != "import" {
		return out
	}
	out = append(out, base)
	sep := "."
	if strings.HasSuffix(base, ".") {
		sep = ""
	}
	expectName := true
	for _, t := range toks[j+1:] {
		switch {
		case t.text == ",":
			expectName = true
		case t.kind == tIdent && expectName && t.text != "as":
			out = append(out, base+sep+t.text)
			expectName = false
		case t.text == "as":
			expectName = false
		}
	}
	return out
}
