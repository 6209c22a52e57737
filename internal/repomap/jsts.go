package repomap

import "strings"

// JavaScript and TypeScript: functions, classes with their methods,
// interfaces, type aliases, enums, namespaces, and top-level const/let/var
// (arrow functions assigned to them count as functions). Statements may end
// without ";" (automatic semicolon insertion), so a line break ends a
// statement unless the tokens around it continue an expression.

var jsModifiers = map[string]bool{"export": true, "default": true, "declare": true, "abstract": true,
	"async": true, "static": true, "public": true, "private": true, "protected": true, "readonly": true,
	"override": true, "accessor": true, "get": true, "set": true}

// jsDeclWords start a declaration; a line starting with one ends the statement before it.
var jsDeclWords = map[string]bool{"function": true, "class": true, "interface": true, "type": true,
	"enum": true, "const": true, "let": true, "var": true, "export": true, "import": true,
	"namespace": true, "module": true, "declare": true, "abstract": true, "async": true}

func parseJS(src string) parsed {
	s := newCScan(src, lexMode{templates: true})
	s.jsBlock(0, len(s.toks), false)
	s.jsImports()
	return s.result()
}

func (s *cscan) jsBlock(lo, hi int, class bool) {
	for i := lo; i < hi; {
		i = max(s.jsStatement(i, hi, class), i+1)
	}
}

// jsStatement recognises the declaration starting at i and returns the
// index after it.
func (s *cscan) jsStatement(i, hi int, class bool) int {
	start := i
	switch s.text(i) {
	case ";", ",", "}", ")", "]":
		return i + 1
	}
	for s.is(i, "@") && s.isIdent(i+1) {
		i += 2
		for s.is(i, ".") && s.isIdent(i+1) {
			i += 2
		}
		if s.is(i, "(") {
			i = s.close(i) + 1
		}
	}
	sigFrom := i
	isDefault := false
	for i < hi && s.isIdent(i) && jsModifiers[s.text(i)] && s.jsModifierAt(i) {
		isDefault = isDefault || s.text(i) == "default"
		i++
	}
	if i >= hi {
		return hi
	}
	if class {
		return s.jsMember(start, sigFrom, i, hi)
	}
	switch s.text(i) {
	case "function":
		return s.jsFunction(start, sigFrom, i, hi, isDefault)
	case "class":
		return s.jsClass(start, sigFrom, i, hi, isDefault)
	case "interface":
		if s.isIdent(i + 1) {
			body, end := s.jsFindBody(i+2, hi)
			s.add(KindType, s.text(i+1), start, sigFrom, bodyOr(body, end+1), end)
			if body >= 0 {
				s.jsBlock(body+1, end, true)
			}
			return end + 1
		}
	case "type":
		if s.isIdent(i+1) && (s.is(i+2, "=") || s.is(i+2, "<")) {
			eq := i + 2
			if s.is(eq, "<") {
				eq = s.skipAngles(eq, hi)
			}
			end := s.jsStmtEnd(i, hi)
			s.add(KindType, s.text(i+1), start, sigFrom, eq, end)
			return end + 1
		}
	case "enum":
		return s.jsEnum(start, sigFrom, i, hi)
	case "namespace", "module", "global":
		return s.jsNamespace(start, sigFrom, i, hi)
	case "const", "let", "var":
		if s.is(i+1, "enum") {
			return s.jsEnum(start, sigFrom, i+1, hi)
		}
		return s.jsVariable(start, sigFrom, i, hi)
	}
	return s.jsStmtEnd(i, hi) + 1
}

// jsModifierAt tells a modifier from a member of the same name: in
// "get() {}" or "static = 1", the word is the name.
func (s *cscan) jsModifierAt(i int) bool {
	switch s.text(i + 1) {
	case "(", "=", ":", ";", "?", "<", "!", ",", "}", ")", "":
		return false
	}
	return true
}

func bodyOr(body, other int) int {
	if body >= 0 {
		return body
	}
	return other
}

func (s *cscan) jsFunction(start, sigFrom, i, hi int, isDefault bool) int {
	j := i + 1
	if s.is(j, "*") {
		j++
	}
	name := ""
	if s.isIdent(j) {
		name = s.text(j)
		j++
	} else if isDefault {
		name = "default"
	}
	body, end := s.jsFindBody(j, hi)
	s.add(KindFunc, name, start, sigFrom, bodyOr(body, end+1), end)
	return end + 1
}

func (s *cscan) jsClass(start, sigFrom, i, hi int, isDefault bool) int {
	name := ""
	if s.isIdent(i+1) && s.text(i+1) != "extends" && s.text(i+1) != "implements" {
		name = s.text(i + 1)
	} else if isDefault {
		name = "default"
	}
	body, end := s.jsFindBody(i+1, hi)
	s.add(KindType, name, start, sigFrom, bodyOr(body, end+1), end)
	if body >= 0 {
		s.jsBlock(body+1, end, true)
	}
	return end + 1
}

func (s *cscan) jsEnum(start, sigFrom, i, hi int) int {
	if !s.isIdent(i + 1) {
		return s.jsStmtEnd(i, hi) + 1
	}
	body, end := s.jsFindBody(i+2, hi)
	s.add(KindType, s.text(i+1), start, sigFrom, bodyOr(body, end+1), end)
	return end + 1
}

func (s *cscan) jsNamespace(start, sigFrom, i, hi int) int {
	j := i + 1
	name := ""
	if s.text(i) == "global" {
		j = i
	} else {
		for s.isIdent(j) || j < hi && s.toks[j].kind == tString {
			name = unquote(s.text(j))
			j++
			if !s.is(j, ".") {
				break
			}
			j++
		}
	}
	if !s.is(j, "{") {
		return s.jsStmtEnd(i, hi) + 1
	}
	end := s.close(j)
	if name != "" {
		s.add(KindModule, name, start, sigFrom, j, end)
	}
	s.jsBlock(j+1, end, false)
	return end + 1
}

// jsVariable handles const/let/var: an arrow function or function
// expression makes a function, anything else a constant or variable.
func (s *cscan) jsVariable(start, sigFrom, i, hi int) int {
	if !s.isIdent(i + 1) {
		return s.jsStmtEnd(i, hi) + 1
	}
	name := s.text(i + 1)
	eq := -1
	for k := i + 2; k < hi; k++ {
		t := s.text(k)
		if t == "=" {
			eq = k
			break
		}
		if t == ";" || t == "," || s.toks[k].nl && !s.jsContinues(k) {
			break
		}
		if t == "(" || t == "[" || t == "{" {
			k = s.close(k)
		} else if t == "<" {
			k = s.skipAngles(k, hi) - 1
		}
	}
	if eq >= 0 {
		if arrow := s.jsArrowAt(eq+1, hi); arrow >= 0 {
			end := s.jsStmtEnd(arrow, hi)
			if s.is(arrow+1, "{") {
				end = s.close(arrow + 1)
			}
			s.add(KindFunc, name, start, sigFrom, arrow+1, end)
			return end + 1
		}
		if s.is(eq+1, "function") || s.is(eq+1, "async") && s.is(eq+2, "function") {
			body, end := s.jsFindBody(eq+2, hi)
			s.add(KindFunc, name, start, sigFrom, bodyOr(body, end+1), end)
			return end + 1
		}
	}
	end := s.jsStmtEnd(i, hi)
	kind := KindVar
	if s.text(i) == "const" {
		kind = KindConst
	}
	s.add(kind, name, start, sigFrom, sigFrom, end)
	s.syms[len(s.syms)-1].Signature = s.constSig(sigFrom, eq, end)
	return end + 1
}

// jsArrowAt returns the index of "=>" when an arrow function starts at i:
// "x =>", "(a, b) =>", "async (a): T =>", "<T>(a: T) =>".
func (s *cscan) jsArrowAt(i, hi int) int {
	if s.is(i, "async") && !s.is(i+1, "=>") {
		i++
	}
	if s.is(i, "<") {
		i = s.skipAngles(i, hi)
	}
	if s.isIdent(i) && s.is(i+1, "=>") {
		return i + 1
	}
	if !s.is(i, "(") {
		return -1
	}
	k := s.close(i) + 1
	if s.is(k, ":") {
		for k++; k < hi && !s.is(k, "=>"); k++ {
			switch s.text(k) {
			case "(", "[", "{":
				k = s.close(k)
			case "<":
				k = s.skipAngles(k, hi) - 1
			case ";", "=":
				return -1
			}
		}
	}
	if s.is(k, "=>") {
		return k
	}
	return -1
}

// jsMember handles one member of a class or interface body.
func (s *cscan) jsMember(start, sigFrom, i, hi int) int {
	if s.is(i, "*") {
		i++
	}
	if s.is(i, "{") { // static initialisation block
		return s.close(i) + 1
	}
	name := ""
	j := i + 1
	switch {
	case s.is(i, "#") && s.isIdent(i+1):
		name, j = "#"+s.text(i+1), i+2
	case s.is(i, "["):
		j = s.close(i) + 1
		if s.is(j, ":") { // index signature
			return s.jsStmtEnd(i, hi) + 1
		}
		name = s.sig(i, j)
	case s.isIdent(i) || i < hi && (s.toks[i].kind == tString || s.toks[i].kind == tNumber):
		name = unquote(s.text(i))
	default:
		return s.jsStmtEnd(i, hi) + 1
	}
	if s.is(j, "?") || s.is(j, "!") {
		j++
	}
	if s.is(j, "<") {
		j = s.skipAngles(j, hi)
	}
	switch {
	case s.is(j, "("):
		body, end := s.jsFindBody(s.close(j)+1, hi)
		s.add(KindMethod, name, start, sigFrom, bodyOr(body, end+1), end)
		return end + 1
	case s.is(j, "="):
		if arrow := s.jsArrowAt(j+1, hi); arrow >= 0 {
			end := s.jsStmtEnd(arrow, hi)
			if s.is(arrow+1, "{") {
				end = s.close(arrow + 1)
			}
			s.add(KindMethod, name, start, sigFrom, arrow+1, end)
			return end + 1
		}
	}
	return s.jsStmtEnd(i, hi) + 1
}

// jsTypeContext are the tokens after which "{" opens an object type, not a
// body: "(): { a: T } {", "extends Base<{ x: 1 }> {".
var jsTypeContext = map[string]bool{":": true, "|": true, "&": true, "<": true, ",": true, "=>": true,
	"(": true, "[": true, "?": true, "=": true, "keyof": true, "typeof": true, "extends": true, "in": true}

// jsFindBody finds the body "{" of a function or class header starting at
// i. Without a body (a declaration, an overload), body is -1 and end is the
// header's last lexeme.
func (s *cscan) jsFindBody(i, hi int) (body, end int) {
	for k := i; k < hi; k++ {
		t := s.toks[k]
		if k > i && t.nl && t.kind == tIdent && jsDeclWords[t.text] && !s.jsContinues(k) {
			return -1, k - 1
		}
		switch t.text {
		case "(", "[":
			k = s.close(k)
		case "{":
			if k > 0 && jsTypeContext[s.text(k-1)] && s.toks[k-1].kind != tString {
				k = s.close(k)
				continue
			}
			return k, s.close(k)
		case ";":
			return -1, k
		case "}", ")", "]":
			return -1, max(k-1, i)
		}
	}
	return -1, max(hi-1, i)
}

// jsStmtEnd returns the last lexeme of the statement starting at i.
func (s *cscan) jsStmtEnd(i, hi int) int {
	for k := i; k < hi; k++ {
		if k > i && s.toks[k].nl && !s.jsContinues(k) {
			return k - 1
		}
		switch s.text(k) {
		case ";":
			return k
		case "(", "[", "{":
			k = s.close(k)
		case "}", ")", "]":
			return max(k-1, i)
		}
	}
	return max(hi-1, i)
}

var jsContinueAfter = map[string]bool{"else": true, "do": true, "try": true, "finally": true, "extends": true,
	"implements": true, "new": true, "typeof": true, "keyof": true, "in": true, "of": true, "as": true,
	"satisfies": true, "instanceof": true, "void": true, "await": true, "yield": true, "case": true}

var jsContinueBefore = map[string]bool{".": true, "?.": true, ",": true, "=>": true, "?": true, ":": true,
	"+": true, "-": true, "*": true, "/": true, "%": true, "=": true, "==": true, "===": true, "!=": true,
	"!==": true, "<": true, ">": true, "<=": true, ">=": true, "&&": true, "||": true, "??": true, "&": true,
	"|": true, "^": true, "(": true, "[": true, "else": true, "catch": true, "finally": true,
	"extends": true, "implements": true, "as": true, "satisfies": true, "instanceof": true, "in": true, "of": true}

// jsContinues reports whether the line break before lexeme k continues the
// current statement rather than ending it.
func (s *cscan) jsContinues(k int) bool {
	prev, next := s.toks[k-1], s.toks[k]
	if prev.kind == tPunct {
		switch prev.text {
		case ")", "]", "}", "++", "--":
		default:
			return true
		}
	} else if prev.kind == tIdent && jsContinueAfter[prev.text] {
		return true
	}
	if next.kind == tString {
		return strings.HasPrefix(next.text, "`")
	}
	if next.text == "{" {
		return prev.text == ")"
	}
	return next.kind != tNumber && jsContinueBefore[next.text]
}

// jsImports collects module specifiers of import/export-from statements,
// require() and dynamic import().
func (s *cscan) jsImports() {
	for i, t := range s.toks {
		if t.kind != tString || strings.HasPrefix(t.text, "`") {
			continue
		}
		switch {
		case s.is(i-1, "from") || s.is(i-1, "import") && s.toks[i-1].kind == tIdent,
			s.is(i-1, "(") && (s.is(i-2, "require") || s.is(i-2, "import")) && s.is(i+1, ")"):
			s.imports = append(s.imports, unquote(t.text))
		}
	}
}
