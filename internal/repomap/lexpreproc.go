package repomap

import "strings"

// directive consumes one preprocessor line (with \ continuations). Includes
// are recorded; the #else/#elif branches of a conditional (and #if 0 blocks)
// are skipped the way ctags does, so both branches of an #if cannot
// unbalance the braces.
func (lx *lexer) directive() {
	text := lx.directiveLine()
	word, rest := directiveWord(text)
	switch word {
	case "include", "import", "include_next":
		rest = strings.TrimSpace(rest)
		if len(rest) > 2 && (rest[0] == '"' || rest[0] == '<') {
			closer := byte('"')
			if rest[0] == '<' {
				closer = '>'
			}
			if end := strings.IndexByte(rest[1:], closer); end > 0 {
				lx.out.includes = append(lx.out.includes, rest[:end+2])
			}
		}
	case "else", "elif", "elifdef", "elifndef":
		lx.skipConditional()
	case "if":
		if strings.TrimSpace(stripLineComment(rest)) == "0" {
			lx.skipConditional()
		}
	}
	lx.nl = true
}

func (lx *lexer) directiveLine() string {
	start := lx.i
	j := lx.i
	for j < len(lx.src) {
		c := lx.src[j]
		if c == '\n' && (j == 0 || lx.src[j-1] != '\\') {
			break
		}
		if c == '/' && j+1 < len(lx.src) && lx.src[j+1] == '*' {
			end := strings.Index(lx.src[j+2:], "*/")
			if end < 0 {
				j = len(lx.src)
				break
			}
			j += 2 + end + 2
			continue
		}
		j++
	}
	lx.advance(j)
	return lx.src[start:j]
}

// skipConditional skips lines up to the #endif that closes the current
// conditional, keeping nested conditionals balanced.
func (lx *lexer) skipConditional() {
	depth := 0
	for lx.i < len(lx.src) {
		nl := strings.IndexByte(lx.src[lx.i:], '\n')
		if nl < 0 {
			lx.i = len(lx.src)
			return
		}
		lx.i += nl + 1
		lx.line++
		j := lx.i
		for j < len(lx.src) && (lx.src[j] == ' ' || lx.src[j] == '\t') {
			j++
		}
		if j >= len(lx.src) || lx.src[j] != '#' {
			continue
		}
		word, _ := directiveWord(lx.src[j:min(len(lx.src), j+40)])
		switch {
		case strings.HasPrefix(word, "if"):
			depth++
		case word == "endif":
			if depth == 0 {
				lx.i = j
				lx.directiveLine()
				return
			}
			depth--
		}
	}
}

func directiveWord(text string) (word, rest string) {
	s := strings.TrimLeft(text, " \t#")
	s = strings.TrimLeft(s, " \t")
	j := 0
	for j < len(s) && isIdentPart(s[j]) {
		j++
	}
	return s[:j], s[j:]
}

func stripLineComment(s string) string {
	if i := strings.Index(s, "//"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "/*"); i >= 0 {
		s = s[:i]
	}
	return s
}
