package repomap

import "strings"

// The Python lexer: logical lines with their indentation, and comments.

type pyLine struct {
	indent        int
	line, endLine int
	toks          []lexeme
}

type pyLexer struct {
	src      string
	i, line  int
	lines    []pyLine
	comments []lexeme
}

func lexPython(src string) *pyLexer {
	lx := &pyLexer{src: src, line: 1}
	lx.run()
	return lx
}

func (lx *pyLexer) run() {
	src := lx.src
	depth := 0
	var cur pyLine
	atStart := true
	flush := func() {
		if len(cur.toks) > 0 {
			cur.endLine = cur.toks[len(cur.toks)-1].endLine
			lx.lines = append(lx.lines, cur)
		}
		cur = pyLine{}
		atStart = true
	}
	for lx.i < len(src) {
		if atStart && depth == 0 {
			col := 0
			for lx.i < len(src) && (src[lx.i] == ' ' || src[lx.i] == '\t' || src[lx.i] == '\f') {
				switch src[lx.i] {
				case ' ':
					col++
				case '\t':
					col = (col/8 + 1) * 8
				default:
					col = 0
				}
				lx.i++
			}
			cur.indent, cur.line = col, lx.line
			atStart = false
			continue
		}
		c := src[lx.i]
		start, startLine := lx.i, lx.line
		switch {
		case c == '\n':
			lx.i++
			lx.line++
			if depth > 0 && startsDefinition(src[lx.i:]) {
				depth = 0 // an unclosed bracket: do not let it swallow the next def
			}
			if depth == 0 {
				flush()
			}
		case c == '\\' && (strings.HasPrefix(src[lx.i+1:], "\n") || strings.HasPrefix(src[lx.i+1:], "\r\n")):
			lx.i += 2
			if src[lx.i-1] == '\r' {
				lx.i++
			}
			lx.line++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			lx.i++
		case c == '#':
			end := strings.IndexByte(src[lx.i:], '\n')
			if end < 0 {
				end = len(src) - lx.i
			}
			lx.i += end
			lx.comments = append(lx.comments, lexeme{text: src[start:lx.i], off: start, line: startLine, endLine: startLine})
		case c == '"' || c == '\'':
			lx.str(c)
			cur.toks = append(cur.toks, lexeme{kind: tString, text: src[start:lx.i], off: start, line: startLine, endLine: lx.line})
		case isIdentStart(c) || c >= 0x80:
			j := lx.i
			for j < len(src) && (isIdentPart(src[j]) || src[j] >= 0x80) {
				j++
			}
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && j-lx.i <= 2 && isStringPrefix(src[lx.i:j]) {
				lx.i = j
				lx.str(src[j])
				cur.toks = append(cur.toks, lexeme{kind: tString, text: src[start:lx.i], off: start, line: startLine, endLine: lx.line})
				continue
			}
			lx.i = j
			cur.toks = append(cur.toks, lexeme{kind: tIdent, text: src[start:j], off: start, line: startLine, endLine: startLine})
		case isDigit(c) || c == '.' && lx.i+1 < len(src) && isDigit(src[lx.i+1]):
			j := lx.i + 1
			for j < len(src) && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			lx.i = j
			cur.toks = append(cur.toks, lexeme{kind: tNumber, text: src[start:j], off: start, line: startLine, endLine: startLine})
		default:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(depth-1, 0)
			}
			n := 1
			if lx.i+1 < len(src) && strings.Contains("->:=**//<<>>", src[lx.i:lx.i+2]) && src[lx.i:lx.i+2] != ">:" {
				n = pyPunctLen(src[lx.i:])
			}
			lx.i += n
			cur.toks = append(cur.toks, lexeme{kind: tPunct, text: src[start:lx.i], off: start, line: startLine, endLine: startLine})
		}
	}
	flush()
}

// startsDefinition reports whether a line starts with def, async def or
// class, which cannot continue a bracketed expression.
func startsDefinition(s string) bool {
	s = strings.TrimLeft(s, " \t")
	s = strings.TrimPrefix(s, "async ")
	return strings.HasPrefix(s, "def ") || strings.HasPrefix(s, "class ")
}

func pyPunctLen(s string) int {
	for _, p := range []string{"->", ":=", "**", "//", "<<", ">>"} {
		if strings.HasPrefix(s, p) {
			return 2
		}
	}
	return 1
}

func isStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt":
		return true
	}
	return false
}

// str scans a string literal whose quote character is q at lx.i.
func (lx *pyLexer) str(q byte) {
	src := lx.src
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(src[lx.i:], triple) {
		j := lx.i + 3
		for j < len(src) {
			if src[j] == '\\' {
				j += 2
				continue
			}
			if strings.HasPrefix(src[j:], triple) {
				j += 3
				break
			}
			j++
		}
		j = min(j, len(src))
		lx.line += strings.Count(src[lx.i:j], "\n")
		lx.i = j
		return
	}
	j := lx.i + 1
	for j < len(src) && src[j] != q && src[j] != '\n' {
		if src[j] == '\\' && j+1 < len(src) {
			if src[j+1] == '\n' {
				lx.line++
			}
			j++
		}
		j++
	}
	if j < len(src) && src[j] == q {
		j++
	}
	lx.i = min(j, len(src))
}
