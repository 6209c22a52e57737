package repomap

// C and C++ (one extractor; C is the subset it meets first): functions and
// prototypes, methods (in class bodies or qualified A::f), classes, structs,
// unions, enums, typedefs and using-aliases, namespaces, const/constexpr
// globals, and #include names as imports. Preprocessor conditionals keep
// their first branch only (see the lexer).

func parseCpp(src string) parsed {
	s := newCScan(src, lexMode{preproc: true, rawCpp: true})
	s.cppBlock(0, len(s.toks), "")
	s.imports = append(s.imports, s.includes...)
	return s.result()
}

func (s *cscan) cppBlock(lo, hi int, class string) {
	for i := lo; i < hi; {
		i = max(s.cppDecl(i, hi, class), i+1)
	}
}

var cppAccess = map[string]bool{"public": true, "private": true, "protected": true, "signals": true,
	"slots": true, "Q_SIGNALS": true, "Q_SLOTS": true}

var cppAttrCalls = map[string]bool{"__attribute__": true, "__declspec": true, "alignas": true, "_Alignas": true}

func (s *cscan) cppDecl(i, hi int, class string) int {
	start := i
	switch s.text(i) {
	case ";", "}", ")", "]":
		return i + 1
	case "{":
		return s.close(i) + 1
	}
	if class != "" && cppAccess[s.text(i)] {
		j := i + 1
		if s.is(j, "slots") || s.is(j, "Q_SLOTS") {
			j++
		}
		if s.is(j, ":") {
			return j + 1
		}
	}
	if next := s.cppMacroLine(i, hi); next > i {
		return next
	}
	sigFrom := i
	for {
		switch {
		case s.is(i, "[") && s.is(i+1, "["):
			i = s.close(i) + 1
			sigFrom = i
			continue
		case cppAttrCalls[s.text(i)] && s.is(i+1, "("):
			i = s.close(i+1) + 1
			continue
		case s.is(i, "template") && s.is(i+1, "<"):
			i = s.skipAngles(i+1, hi)
			continue
		}
		break
	}
	switch s.text(i) {
	case "namespace", "inline":
		if next, ok := s.cppNamespace(start, sigFrom, i, hi); ok {
			return next
		}
	case "extern":
		if i+1 < hi && s.toks[i+1].kind == tString {
			if s.is(i+2, "{") {
				end := s.close(i + 2)
				s.cppBlock(i+3, end, class)
				return end + 1
			}
			i += 2
		}
	case "using":
		end := s.stmtEnd(i, hi)
		if s.isIdent(i+1) && s.is(i+2, "=") {
			s.add(KindType, s.text(i+1), start, sigFrom, i+2, end)
		}
		return end + 1
	case "typedef":
		end := s.stmtEnd(i, hi)
		if name := s.cppTypedefName(i, end); name != "" {
			sigTo := end
			if b := s.findBrace(i, end); b >= 0 {
				sigTo = b
			}
			s.add(KindType, name, start, sigFrom, sigTo, end)
		}
		return end + 1
	case "class", "struct", "union", "enum":
		if next, ok := s.cppRecord(start, sigFrom, i, hi); ok {
			return next
		}
	case "friend", "static_assert", "_Static_assert", "template":
		return s.stmtEnd(i, hi) + 1
	}
	return s.cppFunctionOrVar(start, sigFrom, i, hi, class)
}

// cppMacroLine skips a macro invocation standing alone on its line without
// a semicolon (Q_OBJECT, DECLARE_X(y)), which would otherwise be glued to
// the next declaration. It returns i when token i starts no such line.
func (s *cscan) cppMacroLine(i, hi int) int {
	if !s.isIdent(i) || len(s.text(i)) < 2 || !isUpperName(s.text(i)) {
		return i
	}
	j := i + 1
	if s.is(j, "(") {
		j = s.close(j) + 1
	}
	if j >= hi || !s.toks[j].nl {
		return i
	}
	switch s.text(j) {
	case ";", "{", ":", "=", "const", "->", "(", "override", "noexcept":
		return i
	}
	return j
}

func (s *cscan) cppNamespace(start, sigFrom, i, hi int) (int, bool) {
	j := i + 1
	if s.text(i) == "inline" {
		if !s.is(j, "namespace") {
			return 0, false
		}
		j++
	}
	name := ""
	for s.isIdent(j) || s.is(j, "::") {
		if s.isIdent(j) {
			name = s.text(j)
		}
		j++
	}
	if !s.is(j, "{") {
		return s.stmtEnd(i, hi) + 1, true
	}
	end := s.close(j)
	if name != "" {
		s.add(KindModule, name, start, sigFrom, j, end)
	}
	s.cppBlock(j+1, end, "")
	return end + 1, true
}

// cppRecord handles class/struct/union/enum definitions; ok is false when
// the keyword only starts a type in another declaration ("struct s *f()").
func (s *cscan) cppRecord(start, sigFrom, i, hi int) (next int, ok bool) {
	kw := s.text(i)
	j := i + 1
	if kw == "enum" && (s.is(j, "class") || s.is(j, "struct")) {
		j++
	}
	name := ""
	body := -1
scan:
	for k := j; k < hi; k++ {
		switch t := s.text(k); {
		case t == "{":
			body = k
			break scan
		case t == ":":
			body = s.findBrace(k, hi)
			break scan
		case t == "[" && s.is(k+1, "["):
			k = s.close(k)
		case cppAttrCalls[t] && s.is(k+1, "("):
			k = s.close(k + 1)
		case t == "<":
			k = s.skipAngles(k, hi) - 1
		case t == "::":
		case s.isIdent(k):
			if t != "final" && t != "sealed" {
				name = t
			}
		case t == ";":
			return k + 1, true // forward declaration or "struct s v;"
		default:
			return 0, false
		}
	}
	if body < 0 {
		return 0, false
	}
	end := s.close(body)
	if name != "" {
		s.add(KindType, name, start, sigFrom, body, end)
	}
	if kw != "enum" {
		inner := name
		if inner == "" {
			inner = "(anonymous)"
		}
		s.cppBlock(body+1, end, inner)
	}
	// Declarators after the closing brace: "} a, *b;".
	for k := end + 1; k < hi; k++ {
		switch {
		case s.is(k, ";"):
			return k + 1, true
		case s.isIdent(k) || s.is(k, "*") || s.is(k, ",") || s.is(k, "&"):
			continue
		}
		break
	}
	return end + 1, true
}

// cppTypedefName finds the name a typedef introduces: the last identifier
// at depth 0, or the one in "(*name)" for a function pointer type.
func (s *cscan) cppTypedefName(i, end int) string {
	name := ""
	for k := i + 1; k < end; k++ {
		switch {
		case s.is(k, "(") && s.is(k+1, "*") && s.isIdent(k+2):
			return s.text(k + 2)
		case s.is(k, "(") || s.is(k, "[") || s.is(k, "{"):
			k = s.close(k)
		case s.isIdent(k):
			name = s.text(k)
		}
	}
	return name
}

var cppNotNames = map[string]bool{"if": true, "while": true, "for": true, "switch": true, "return": true,
	"sizeof": true, "alignof": true, "decltype": true, "typeof": true, "__typeof__": true, "noexcept": true,
	"throw": true, "defined": true, "static_assert": true, "_Static_assert": true, "void": true,
	"int": true, "char": true, "short": true, "long": true, "float": true, "double": true, "signed": true,
	"unsigned": true, "bool": true, "auto": true, "const": true, "volatile": true, "__attribute__": true,
	"__declspec": true, "alignas": true, "requires": true, "catch": true, "new": true, "delete": true}

// cppFunctionOrVar handles the generic declaration: a function (definition
// or prototype) when a name is followed by a parameter list, a constant when
// it is const/constexpr with an initializer, nothing otherwise.
func (s *cscan) cppFunctionOrVar(start, sigFrom, i, hi int, class string) int {
	nameIdx, paren := -1, -1
	constant := false
	for k := i; k < hi; k++ {
		switch t := s.text(k); t {
		case "(":
			if paren < 0 {
				if n, p := s.cppName(k, i, class); n >= 0 {
					nameIdx, paren = n, p
					k = s.close(p)
					continue
				}
			}
			k = s.close(k)
		case "[":
			k = s.close(k)
		case "<":
			if paren < 0 && k > i && s.isIdent(k-1) && !s.is(k-1, "operator") {
				k = s.skipAngles(k, hi) - 1
			}
		case "const", "constexpr":
			constant = constant || paren < 0
		case "{":
			if paren < 0 {
				return s.close(k) + 1 // brace initialiser or an unknown macro block
			}
			end := s.close(k)
			s.cppAddFunc(start, sigFrom, nameIdx, paren, k, end, class)
			return end + 1
		case ";":
			if paren >= 0 {
				s.cppAddFunc(start, sigFrom, nameIdx, paren, k, k, class)
			}
			return k + 1
		case "=":
			if s.is(k-1, "operator") {
				continue
			}
			end := s.stmtEnd(k, hi)
			switch {
			case paren >= 0: // = 0, = default, = delete
				s.cppAddFunc(start, sigFrom, nameIdx, paren, end, end, class)
			case constant && class == "" && s.isIdent(k-1):
				s.add(KindConst, s.text(k-1), start, sigFrom, sigFrom, end)
				s.syms[len(s.syms)-1].Signature = s.constSig(sigFrom, k, end)
			}
			return end + 1
		case ":":
			if paren >= 0 { // constructor initialiser list
				if body := s.cppInitList(k+1, hi); body >= 0 {
					end := s.close(body)
					s.cppAddFunc(start, sigFrom, nameIdx, paren, k, end, class)
					return end + 1
				}
			}
		case "}", ")", "]":
			return k
		}
	}
	return hi
}

// cppName returns the name token and the parameter list of a function
// whose "(" is at k, or -1 when the parenthesis starts no function.
func (s *cscan) cppName(k, i int, class string) (name, paren int) {
	n := k - 1
	switch {
	case s.is(n, "operator") && s.is(k+1, ")") && s.is(k+2, "("): // operator()(
		return n, k + 2
	case !s.isIdent(n):
		for m := n; m >= max(i, n-3); m-- {
			if s.is(m, "operator") {
				return m, k
			}
		}
		return -1, -1
	case s.is(n-1, "operator"): // operator bool(
		return n - 1, k
	case cppNotNames[s.text(n)]:
		return -1, -1
	}
	first := n
	if s.is(first-1, "~") {
		first--
	}
	qualified := s.is(first-1, "::")
	for s.is(first-1, "::") && (s.isIdent(first-2) || s.is(first-2, ">")) {
		first -= 2
		if s.is(first, ">") {
			return n, k // Foo<T>::bar: qualified
		}
	}
	if first <= i && !qualified && class == "" {
		return -1, -1 // no return type: a macro call such as TEST(a, b)
	}
	return n, k
}

func (s *cscan) cppAddFunc(start, sigFrom, nameIdx, paren, sigTo, end int, class string) {
	name := s.text(nameIdx)
	switch {
	case s.is(nameIdx, "operator"):
		for k := nameIdx + 1; k < paren; k++ {
			if s.isIdent(k) {
				name += " "
			}
			name += s.text(k)
		}
	case s.is(nameIdx-1, "~"):
		name = "~" + name
	}
	kind := KindFunc
	if class != "" || s.is(nameIdx-1, "::") || s.is(nameIdx-2, "::") && s.is(nameIdx-1, "~") {
		kind = KindMethod
	}
	if s.is(sigTo, ";") || s.is(sigTo, ":") || s.is(sigTo, "{") {
		s.add(kind, name, start, sigFrom, sigTo, end)
		return
	}
	s.add(kind, name, start, sigFrom, sigTo+1, end)
	if sig := s.syms[len(s.syms)-1].Signature; len(sig) > 0 && sig[len(sig)-1] == ';' {
		s.syms[len(s.syms)-1].Signature = sig[:len(sig)-1]
	}
}

// cppInitList finds the body after a constructor's initialiser list
// "a(1), b{2}, c()": a "{" right after an identifier or ">" initialises a
// member; one after ")" or "}" is the body.
func (s *cscan) cppInitList(i, hi int) int {
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case "(", "[":
			k = s.close(k)
		case "{":
			if s.isIdent(k-1) || s.is(k-1, ">") {
				k = s.close(k)
				continue
			}
			return k
		case ";", "}":
			return -1
		}
	}
	return -1
}
