package repomap

import (
	"sort"
	"strings"
)

// cscan holds the state shared by the extractors of the C family (JS/TS,
// Java, Rust, C/C++): the lexeme stream with its bracket pairs, and the
// symbols found so far. Each language walks declarations in a lexeme range
// and jumps over bodies by their matching brace, so a function body is never
// scanned lexeme by lexeme.
type cscan struct {
	*lexed
	syms    []Symbol
	imports []string
}

func newCScan(src string, mode lexMode) *cscan {
	return &cscan{lexed: lex(src, mode)}
}

func (s *cscan) result() parsed {
	p := parsed{syms: s.syms, imports: s.imports}
	p.refs = make([]string, 0, len(s.toks)/3)
	for _, t := range s.toks {
		if t.kind == tIdent && len(t.text) > 1 && len(t.text) <= maxIdentLen && t.text[0] != '\'' {
			p.refs = append(p.refs, t.text)
		}
	}
	return p
}

// maxIdentLen bounds the identifiers kept as references; longer ones are
// almost always generated names and would only bloat the cache.
const maxIdentLen = 64

// is reports whether lexeme i is the punctuation or word text (never a
// string literal that happens to hold it).
func (s *cscan) is(i int, text string) bool {
	return i >= 0 && i < len(s.toks) && s.toks[i].kind != tString && s.toks[i].text == text
}

func (s *cscan) isIdent(i int) bool { return i >= 0 && i < len(s.toks) && s.toks[i].kind == tIdent }

func (s *cscan) text(i int) string {
	if i < 0 || i >= len(s.toks) {
		return ""
	}
	return s.toks[i].text
}

// close returns the index of the bracket matching the opener at i (i itself
// when lexeme i is not a bracket).
func (s *cscan) close(i int) int {
	if i < 0 || i >= len(s.toks) {
		return i
	}
	if m := s.match[i]; m > int32(i) {
		return int(m)
	}
	return i
}

// skipAngles returns the index after the generic argument list <...> that
// starts at i. Other brackets inside are jumped over whole; ";" or a body
// "{" ends a list that was really a comparison.
func (s *cscan) skipAngles(i, hi int) int {
	depth := 0
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case "<":
			depth++
		case ">":
			depth--
			if depth == 0 {
				return k + 1
			}
		case "(", "[", "{":
			k = s.close(k)
		case ";", ")", "]", "}":
			return i + 1
		}
	}
	return i + 1
}

// sig renders tokens [from, to) as one line: tokens separated in the source
// by whitespace or comments get one space.
func (s *cscan) sig(from, to int) string {
	if from < 0 || to > len(s.toks) || from >= to {
		return ""
	}
	for to > from+1 && s.toks[to-1].text == ";" && s.toks[to-1].kind == tPunct {
		to--
	}
	var b strings.Builder
	for k := from; k < to; k++ {
		t := s.toks[k]
		if k > from && t.off > s.toks[k-1].end() {
			b.WriteByte(' ')
		}
		if t.kind == tString && strings.ContainsAny(t.text, "\n\r\t") {
			b.WriteString(collapse(t.text))
		} else {
			b.WriteString(t.text)
		}
		if b.Len() > maxSignature {
			break
		}
	}
	return capText(b.String())
}

// doc returns the first line of the comment block that ends right above
// lexeme i (on the line before it, with no code in between).
func (s *cscan) doc(i int) string {
	if i < 0 || i >= len(s.toks) || len(s.comments) == 0 {
		return ""
	}
	t := s.toks[i]
	prevEnd, prevLine := 0, 0
	if i > 0 {
		prevEnd, prevLine = s.toks[i-1].end(), s.toks[i-1].endLine
	}
	k := sort.Search(len(s.comments), func(k int) bool { return s.comments[k].off >= t.off }) - 1
	if k < 0 || s.comments[k].off < prevEnd || s.comments[k].endLine < t.line-1 || s.comments[k].line <= prevLine {
		return ""
	}
	for k > 0 {
		c := s.comments[k-1]
		if c.off < prevEnd || c.line <= prevLine || c.endLine < s.comments[k].line-1 {
			break
		}
		k--
	}
	return firstDocLine(s.comments[k].text)
}

// add records a symbol whose declaration starts at lexeme start (its doc is
// looked up there), whose signature is tokens [sigFrom, sigTo) and which
// ends at lexeme end.
func (s *cscan) add(kind, name string, start, sigFrom, sigTo, end int) {
	if name == "" || start >= len(s.toks) {
		return
	}
	end = max(min(end, len(s.toks)-1), start)
	s.syms = append(s.syms, Symbol{
		Kind:      kind,
		Name:      name,
		Signature: s.sig(sigFrom, sigTo),
		Doc:       s.doc(start),
		StartLine: s.toks[start].line,
		EndLine:   s.toks[end].endLine,
	})
}

// stmtEnd returns the last lexeme of a statement that ends with ";" at
// bracket depth 0 (or at the end of the enclosing block).
func (s *cscan) stmtEnd(i, hi int) int {
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case ";":
			return k
		case "(", "[", "{":
			k = s.close(k)
		case ")", "]", "}":
			return max(k-1, i)
		}
	}
	return hi - 1
}

// constSig is the signature of a constant or variable: the whole
// declaration when it is short and on one line, else up to its "=".
func (s *cscan) constSig(from, eq, end int) string {
	if end >= from && end < len(s.toks) {
		last := end
		if s.is(last, ";") || s.is(last, ",") {
			last--
		}
		if last >= from && s.toks[last].endLine == s.toks[from].line && s.toks[last].end()-s.toks[from].off <= 100 {
			return s.sig(from, last+1)
		}
	}
	if eq < 0 {
		eq = end
	}
	return s.sig(from, eq)
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'' || s[0] == '`') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
