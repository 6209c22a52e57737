package repomap

import "strings"

// template scans a JS template literal, including ${ } substitutions that
// may hold strings, comments and further templates.
func (lx *lexer) template() {
	j := lx.i + 1
	for j < len(lx.src) {
		switch c := lx.src[j]; {
		case c == '\\':
			j += 2
		case c == '`':
			lx.advance(j + 1)
			return
		case c == '$' && j+1 < len(lx.src) && lx.src[j+1] == '{':
			lx.advance(j + 2)
			lx.skipSubstitution()
			j = lx.i
		default:
			j++
		}
	}
	lx.advance(len(lx.src))
}

func (lx *lexer) skipSubstitution() {
	depth := 1
	for lx.i < len(lx.src) {
		switch c := lx.src[lx.i]; {
		case c == '{':
			depth++
			lx.i++
		case c == '}':
			depth--
			lx.i++
			if depth == 0 {
				return
			}
		case c == '"' || c == '\'':
			lx.quoted(c)
		case c == '`':
			lx.template()
		case c == '/' && lx.peek(1) == '*':
			lx.blockComment()
		case c == '/' && lx.peek(1) == '/':
			end := strings.IndexByte(lx.src[lx.i:], '\n')
			if end < 0 {
				end = len(lx.src) - lx.i
			}
			lx.i += end
		case c == '\n':
			lx.line++
			lx.i++
		default:
			lx.i++
		}
	}
}

var regexKeywords = map[string]bool{"return": true, "typeof": true, "instanceof": true, "in": true, "of": true,
	"new": true, "delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true}

// regexAllowed decides whether a slash starts a regular expression: it does
// where an expression may begin, after an operator or a keyword, and not
// after a value (identifier, literal, closing bracket).
func (lx *lexer) regexAllowed() bool {
	n := len(lx.out.toks)
	if n == 0 {
		return true
	}
	prev := lx.out.toks[n-1]
	switch prev.kind {
	case tIdent:
		return regexKeywords[prev.text]
	case tString, tNumber:
		return false
	}
	switch prev.text {
	case ")", "]", "}", "++", "--":
		return false
	}
	return true
}

func (lx *lexer) regex() bool {
	j := lx.i + 1
	inClass := false
	for j < len(lx.src) {
		c := lx.src[j]
		switch {
		case c == '\\':
			j += 2
			continue
		case c == '\n':
			return false
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			j++
			for j < len(lx.src) && isIdentPart(lx.src[j]) {
				j++
			}
			lx.i = j
			return true
		}
		j++
	}
	return false
}
