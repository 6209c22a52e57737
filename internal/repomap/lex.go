package repomap

import "strings"

type tokKind uint8

const (
	tIdent tokKind = iota
	tPunct
	tString
	tNumber
)

// lexeme is one token of a C-like source file. text is a substring of the
// source, so tokens cost no allocation beyond the slice that holds them.
type lexeme struct {
	kind    tokKind
	nl      bool // a line break separates it from the previous lexeme
	text    string
	off     int // byte offset of the first character
	line    int // 1-based line of the first character
	endLine int // line of the last character (strings and comments can span lines)
}

func (t lexeme) end() int { return t.off + len(t.text) }

// lexMode selects the lexical quirks of one language of the C family.
type lexMode struct {
	preproc       bool // C/C++: # directives, #else branches skipped
	nestedComment bool // Rust: /* /* */ */ nests
	lifetimes     bool // Rust: 'a is a lifetime, b"" r#""# strings
	templates     bool // JS/TS: `template ${}` literals and /regex/ literals
	rawCpp        bool // C++: R"delim( ... )delim"
	textBlocks    bool // Java: """ text blocks """
}

// lexed is the result of tokenizing one file: code tokens, the comments
// (kept apart so declaration scanners never trip over them; docs are looked
// up by position) and, for C/C++, the #include targets.
type lexed struct {
	src      string
	toks     []lexeme
	comments []lexeme
	includes []string
	match    []int32 // index of the matching bracket for ( [ { and ) ] }, or -1
}

// lexer walks the source once. It never fails: an unterminated string or
// comment simply runs to the end of the file.
type lexer struct {
	lexMode
	src  string
	i    int
	line int
	nl   bool
	out  lexed
}

func lex(src string, mode lexMode) *lexed {
	lx := &lexer{lexMode: mode, src: src, line: 1, nl: true}
	lx.out.src = src
	lx.out.toks = make([]lexeme, 0, len(src)/5)
	lx.run()
	lx.out.match = matchBrackets(lx.out.toks)
	return &lx.out
}

func (lx *lexer) emit(kind tokKind, start, startLine int) {
	lx.out.toks = append(lx.out.toks, lexeme{kind: kind, nl: lx.nl, text: lx.src[start:lx.i], off: start, line: startLine, endLine: lx.line})
	lx.nl = false
}

func (lx *lexer) comment(start, startLine int) {
	lx.out.comments = append(lx.out.comments, lexeme{text: lx.src[start:lx.i], off: start, line: startLine, endLine: lx.line})
}

// advance moves to index j, counting the line breaks passed.
func (lx *lexer) advance(j int) {
	if j > len(lx.src) {
		j = len(lx.src)
	}
	lx.line += strings.Count(lx.src[lx.i:j], "\n")
	lx.i = j
}

func (lx *lexer) run() {
	src := lx.src
	for lx.i < len(src) {
		c := src[lx.i]
		start, startLine := lx.i, lx.line
		switch {
		case c == '\n':
			lx.i++
			lx.line++
			lx.nl = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			lx.i++
		case c == '/' && lx.peek(1) == '/':
			end := strings.IndexByte(src[lx.i:], '\n')
			if end < 0 {
				end = len(src) - lx.i
			}
			lx.i += end
			lx.comment(start, startLine)
		case c == '/' && lx.peek(1) == '*':
			lx.blockComment()
			lx.comment(start, startLine)
		case c == '#' && lx.preproc && lx.atLineStart():
			lx.directive()
		case isIdentStart(c) || c >= 0x80:
			lx.ident(start, startLine)
		case c >= '0' && c <= '9' || c == '.' && isDigit(lx.peek(1)):
			lx.number()
			lx.emit(tNumber, start, startLine)
		case c == '"' || c == '\'' && !lx.lifetimes:
			if lx.textBlocks && strings.HasPrefix(src[lx.i:], `"""`) {
				lx.tripleQuoted()
			} else {
				lx.quoted(c)
			}
			lx.emit(tString, start, startLine)
		case c == '\'':
			lx.rustQuote(start, startLine)
		case c == '`' && lx.templates:
			lx.template()
			lx.emit(tString, start, startLine)
		case c == '/' && lx.templates && lx.regexAllowed():
			if !lx.regex() {
				lx.i = start + 1
				lx.emit(tPunct, start, startLine)
			} else {
				lx.emit(tString, start, startLine)
			}
		default:
			lx.i += punctLen(src[lx.i:])
			lx.emit(tPunct, start, startLine)
		}
	}
}

func (lx *lexer) peek(n int) byte {
	if lx.i+n < len(lx.src) {
		return lx.src[lx.i+n]
	}
	return 0
}

func (lx *lexer) atLineStart() bool {
	for j := lx.i - 1; j >= 0; j-- {
		switch lx.src[j] {
		case ' ', '\t':
			continue
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

func (lx *lexer) blockComment() {
	depth := 0
	j := lx.i
	for j < len(lx.src) {
		switch {
		case strings.HasPrefix(lx.src[j:], "/*"):
			depth++
			j += 2
		case strings.HasPrefix(lx.src[j:], "*/"):
			depth--
			j += 2
			if depth == 0 || !lx.nestedComment {
				lx.advance(j)
				return
			}
		default:
			j++
		}
		if !lx.nestedComment && depth > 1 {
			depth = 1
		}
	}
	lx.advance(len(lx.src))
}

func (lx *lexer) ident(start, startLine int) {
	j := lx.i
	for j < len(lx.src) && (isIdentPart(lx.src[j]) || lx.src[j] >= 0x80) {
		j++
	}
	lx.i = j
	word := lx.src[start:j]
	next := lx.peek(0)
	switch {
	case lx.lifetimes && (next == '"' || next == '#' && lx.peek(1) == '"' || next == '#' && lx.peek(1) == '#') &&
		(word == "r" || word == "br" || word == "cr"):
		lx.rustRaw()
		lx.emit(tString, start, startLine)
	case lx.lifetimes && (word == "b" || word == "c") && (next == '"' || next == '\''):
		lx.quoted(next)
		lx.emit(tString, start, startLine)
	case lx.rawCpp && next == '"' && (word == "R" || word == "u8R" || word == "LR" || word == "uR" || word == "UR"):
		lx.cppRaw()
		lx.emit(tString, start, startLine)
	case lx.preproc && next == '"' && (word == "L" || word == "u8" || word == "u" || word == "U"):
		lx.quoted('"')
		lx.emit(tString, start, startLine)
	default:
		lx.emit(tIdent, start, startLine)
	}
}

func (lx *lexer) number() {
	j := lx.i
	for j < len(lx.src) {
		c := lx.src[j]
		if isIdentPart(c) || c == '.' || c == '\'' && lx.preproc {
			j++
			continue
		}
		if (c == '+' || c == '-') && j > lx.i && (lx.src[j-1] == 'e' || lx.src[j-1] == 'E' || lx.src[j-1] == 'p' || lx.src[j-1] == 'P') {
			j++
			continue
		}
		break
	}
	lx.i = j
}

// quoted scans a string or char literal delimited by q; an unescaped line
// break ends it too, so one broken literal cannot swallow the file.
func (lx *lexer) quoted(q byte) {
	j := lx.i + 1
	for j < len(lx.src) {
		c := lx.src[j]
		if c == '\\' {
			j += 2
			continue
		}
		if c == q {
			j++
			break
		}
		// Only Rust strings may span lines.
		if c == '\n' && !(lx.lifetimes && q == '"') {
			break
		}
		j++
	}
	lx.advance(j)
}

func (lx *lexer) tripleQuoted() {
	end := strings.Index(lx.src[lx.i+3:], `"""`)
	if end < 0 {
		lx.advance(len(lx.src))
		return
	}
	lx.advance(lx.i + 3 + end + 3)
}

// rustQuote tells a char literal ('a', '\n') from a lifetime ('a).
func (lx *lexer) rustQuote(start, startLine int) {
	src := lx.src
	if lx.peek(1) == '\\' || lx.i+2 < len(src) && src[lx.i+2] == '\'' {
		lx.quoted('\'')
		lx.emit(tString, start, startLine)
		return
	}
	j := lx.i + 1
	for j < len(src) && (isIdentPart(src[j]) || src[j] >= 0x80) {
		j++
	}
	if j < len(src) && src[j] == '\'' { // a multi-byte character such as 'é'
		lx.i = j + 1
		lx.emit(tString, start, startLine)
		return
	}
	if j == lx.i+1 {
		lx.i++
		lx.emit(tPunct, start, startLine)
		return
	}
	lx.i = j
	lx.emit(tIdent, start, startLine)
}

func (lx *lexer) rustRaw() {
	j := lx.i
	hashes := 0
	for j < len(lx.src) && lx.src[j] == '#' {
		hashes++
		j++
	}
	if j >= len(lx.src) || lx.src[j] != '"' {
		return
	}
	closer := `"` + strings.Repeat("#", hashes)
	end := strings.Index(lx.src[j+1:], closer)
	if end < 0 {
		lx.advance(len(lx.src))
		return
	}
	lx.advance(j + 1 + end + len(closer))
}

func (lx *lexer) cppRaw() {
	open := strings.IndexByte(lx.src[lx.i:], '(')
	if open < 0 || open > 18 {
		lx.quoted('"')
		return
	}
	delim := lx.src[lx.i+1 : lx.i+open]
	closer := ")" + delim + `"`
	end := strings.Index(lx.src[lx.i+open:], closer)
	if end < 0 {
		lx.advance(len(lx.src))
		return
	}
	lx.advance(lx.i + open + end + len(closer))
}

var punct3 = []string{"...", "<<=", ">>=", "===", "!==", "**=", "&&=", "||=", "??=", "..="}
var punct2 = []string{"::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=",
	"%=", "&=", "|=", "^=", "<<", "?.", "??", ".."}

// punctLen returns the length of the operator at the start of s. ">>" is
// never joined: it closes two generic argument lists as often as it shifts.
func punctLen(s string) int {
	for _, p := range punct3 {
		if strings.HasPrefix(s, p) && p[0] != '>' {
			return 3
		}
	}
	for _, p := range punct2 {
		if strings.HasPrefix(s, p) {
			return 2
		}
	}
	return 1
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// matchBrackets pairs every bracket with its partner. A stray closer is
// left unmatched (-1); an opener never closed matches the last lexeme, so a
// truncated file still has well-formed ranges.
func matchBrackets(toks []lexeme) []int32 {
	match := make([]int32, len(toks))
	var stack []int32
	for i, t := range toks {
		match[i] = -1
		if t.kind != tPunct || len(t.text) != 1 {
			continue
		}
		switch c := t.text[0]; c {
		case '(', '[', '{':
			stack = append(stack, int32(i))
		case ')', ']', '}':
			open := opener(c)
			// Pop openers that were never closed (e.g. "(" in a broken
			// expression) until the right kind is found; if there is none,
			// the closer is stray.
			k := len(stack) - 1
			for k >= 0 && toks[stack[k]].text[0] != open {
				k--
			}
			if k < 0 {
				continue
			}
			for _, un := range stack[k+1:] {
				match[un] = int32(i - 1)
			}
			match[stack[k]] = int32(i)
			match[i] = stack[k]
			stack = stack[:k]
		}
	}
	for _, un := range stack {
		match[un] = int32(len(toks) - 1)
	}
	return match
}

func opener(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}
