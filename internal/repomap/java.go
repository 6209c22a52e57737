package repomap

import "strings"

// Java: classes, interfaces, enums, records and annotation types (nested
// ones too), methods and constructors, static final constants, imports.

var javaModifiers = map[string]bool{"public": true, "private": true, "protected": true, "static": true,
	"final": true, "abstract": true, "native": true, "synchronized": true, "transient": true,
	"volatile": true, "strictfp": true, "default": true, "sealed": true, "non": true, "-": true}

func parseJava(src string) parsed {
	s := newCScan(src, lexMode{textBlocks: true})
	s.javaBlock(0, len(s.toks), false, false)
	return s.result()
}

// javaBlock walks the declarations in tokens [lo, hi): a file or a type body.
func (s *cscan) javaBlock(lo, hi int, inType, isEnum bool) {
	i := lo
	if isEnum { // enum constants come first, up to the first ";"
		i = s.stmtEnd(lo, hi) + 1
	}
	for i < hi {
		i = max(s.javaMember(i, hi, inType), i+1)
	}
}

func (s *cscan) javaMember(i, hi int, inType bool) int {
	start := i
	switch s.text(i) {
	case ";", "}", ")", "]":
		return i + 1
	case "{": // initializer block
		return s.close(i) + 1
	case "package":
		return s.stmtEnd(i, hi) + 1
	case "import":
		end := s.stmtEnd(i, hi)
		j := i + 1
		if s.is(j, "static") {
			j++
		}
		s.imports = append(s.imports, strings.ReplaceAll(s.sig(j, end), " ", ""))
		return end + 1
	}
	for s.is(i, "@") && s.isIdent(i+1) && s.text(i+1) != "interface" {
		i += 2
		for s.is(i, ".") && s.isIdent(i+1) {
			i += 2
		}
		if s.is(i, "(") {
			i = s.close(i) + 1
		}
	}
	sigFrom := i
	static, final := false, false
	for i < hi && javaModifiers[s.text(i)] && s.toks[i].kind != tString {
		static = static || s.text(i) == "static"
		final = final || s.text(i) == "final"
		i++
	}
	if i >= hi {
		return hi
	}
	switch t := s.text(i); {
	case t == "class" || t == "interface" || t == "enum" || t == "record" ||
		t == "@" && s.is(i+1, "interface"):
		if t == "@" {
			i++
		}
		if !s.isIdent(i + 1) {
			return i + 1
		}
		body := s.findBrace(i+2, hi)
		if body < 0 {
			return s.stmtEnd(i, hi) + 1
		}
		end := s.close(body)
		s.add(KindType, s.text(i+1), start, sigFrom, body, end)
		s.javaBlock(body+1, end, true, t == "enum")
		return end + 1
	case !inType:
		return s.stmtEnd(i, hi) + 1
	}
	if s.is(i, "<") { // generic method
		i = s.skipAngles(i, hi)
	}
	// A member is a method when an identifier is followed by "(" before any
	// "=" or ";"; otherwise it is a field.
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case "(":
			if !s.isIdent(k - 1) {
				return s.stmtEnd(i, hi) + 1
			}
			body, end := s.javaBody(s.close(k)+1, hi)
			s.add(KindMethod, s.text(k-1), start, sigFrom, bodyOr(body, end+1), end)
			return end + 1
		case "<":
			k = s.skipAngles(k, hi) - 1
		case "[":
			k = s.close(k)
		case "=", ";", "{":
			end := s.stmtEnd(i, hi)
			if static && final && s.isIdent(k-1) {
				s.add(KindConst, s.text(k-1), start, sigFrom, sigFrom, end)
				s.syms[len(s.syms)-1].Signature = s.constSig(sigFrom, k, end)
			}
			return end + 1
		}
	}
	return hi
}

// findBrace returns the index of the first "{" at depth 0 from i, or -1 if
// a ";" comes first.
func (s *cscan) findBrace(i, hi int) int {
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case "{":
			return k
		case "(", "[":
			k = s.close(k)
		case ";", "}":
			return -1
		}
	}
	return -1
}

// javaBody finds a method body after its parameter list: "throws ..." may
// come first; "default value;" (annotation members) and ";" mean none.
func (s *cscan) javaBody(i, hi int) (body, end int) {
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case "{":
			return k, s.close(k)
		case ";":
			return -1, k
		case "(", "[":
			k = s.close(k)
		case "}":
			return -1, max(k-1, i)
		}
	}
	return -1, max(hi-1, i)
}
