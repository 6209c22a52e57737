package repomap

import "strings"

// Rust: functions, structs, enums, unions, traits (with their methods),
// impl blocks (with their methods), type aliases, consts, statics, modules,
// macro_rules! and use/mod declarations as imports.

func parseRust(src string) parsed {
	s := newCScan(src, lexMode{nestedComment: true, lifetimes: true})
	s.rustBlock(0, len(s.toks), false)
	return s.result()
}

var rustQualifiers = map[string]bool{"pub": true, "default": true, "async": true, "unsafe": true,
	"extern": true, "const": true}

func (s *cscan) rustBlock(lo, hi int, inImpl bool) {
	for i := lo; i < hi; {
		i = max(s.rustItem(i, hi, inImpl), i+1)
	}
}

func (s *cscan) rustItem(i, hi int, inImpl bool) int {
	start := i
	for s.is(i, "#") && (s.is(i+1, "[") || s.is(i+1, "!") && s.is(i+2, "[")) {
		if s.is(i+1, "!") {
			i++
		}
		i = s.close(i+1) + 1
	}
	sigFrom := i
	for i < hi && rustQualifiers[s.text(i)] && s.isIdent(i) {
		// "const NAME:" is an item, "const fn" a qualifier.
		if s.text(i) == "const" && s.isIdent(i+1) && !rustQualifiers[s.text(i+1)] && s.text(i+1) != "fn" {
			break
		}
		if s.text(i) == "extern" && s.is(i+1, "crate") {
			break
		}
		i++
		if s.text(i-1) == "pub" && s.is(i, "(") {
			i = s.close(i) + 1
		}
		if s.text(i-1) == "extern" && i < hi && s.toks[i].kind == tString {
			i++
		}
	}
	if i >= hi {
		return hi
	}
	kw := s.text(i)
	name := s.text(i + 1)
	switch {
	case kw == "{" && i > sigFrom && s.text(i-1) != "pub": // extern "C" { ... }
		end := s.close(i)
		s.rustBlock(i+1, end, false)
		return end + 1
	case kw == "fn" && s.isIdent(i+1):
		body, end := s.rustBody(i+2, hi)
		kind := KindFunc
		if inImpl {
			kind = KindMethod
		}
		s.add(kind, name, start, sigFrom, bodyOr(body, end+1), end)
		return end + 1
	case (kw == "struct" || kw == "enum" || kw == "union" || kw == "type") && s.isIdent(i+1):
		body, end := s.rustBody(i+2, hi)
		sigTo := bodyOr(body, end+1)
		if kw == "type" {
			sigTo = s.rustAssign(i+2, end)
		} else if body < 0 && s.is(end, ";") {
			sigTo = end
		}
		s.add(KindType, name, start, sigFrom, sigTo, end)
		return end + 1
	case kw == "trait" && s.isIdent(i+1):
		body, end := s.rustBody(i+2, hi)
		s.add(KindType, name, start, sigFrom, bodyOr(body, end+1), end)
		if body >= 0 {
			s.rustBlock(body+1, end, true)
		}
		return end + 1
	case kw == "impl":
		body, end := s.rustBody(i+1, hi)
		if body < 0 {
			return end + 1
		}
		s.add(KindImpl, s.rustImplType(i+1, body), start, sigFrom, body, end)
		s.rustBlock(body+1, end, true)
		return end + 1
	case (kw == "const" || kw == "static") && s.isIdent(i+1):
		j := i + 1
		if s.is(j, "mut") {
			j++
		}
		end := s.stmtEnd(j, hi)
		kind := KindConst
		if kw == "static" {
			kind = KindVar
		}
		if s.text(j) != "_" {
			s.add(kind, s.text(j), start, sigFrom, sigFrom, end)
			s.syms[len(s.syms)-1].Signature = s.constSig(sigFrom, s.rustAssign(j, end), end)
		}
		return end + 1
	case kw == "mod" && s.isIdent(i+1):
		if s.is(i+2, ";") {
			s.imports = append(s.imports, "mod:"+name)
			s.add(KindModule, name, start, sigFrom, i+2, i+2)
			return i + 3
		}
		if s.is(i+2, "{") {
			end := s.close(i + 2)
			s.add(KindModule, name, start, sigFrom, i+2, end)
			s.rustBlock(i+3, end, false)
			return end + 1
		}
	case kw == "use":
		end := s.stmtEnd(i, hi)
		s.imports = append(s.imports, strings.ReplaceAll(s.sig(i+1, end), " ", ""))
		return end + 1
	case kw == "macro_rules" && s.is(i+1, "!") && s.isIdent(i+2):
		end := s.close(i + 3)
		if !s.is(i+3, "{") && s.is(end+1, ";") {
			end++
		}
		s.add(KindMacro, s.text(i+2), start, sigFrom, i+3, end)
		return end + 1
	}
	if s.isIdent(i) && s.is(i+1, "!") { // item-level macro call
		if s.is(i+2, "{") {
			return s.close(i+2) + 1
		}
	}
	return s.stmtEnd(i, hi) + 1
}

// rustBody finds the "{" body of an item header starting at i; a header
// ending in ";" (a declaration, a tuple or unit struct, an alias) has none.
func (s *cscan) rustBody(i, hi int) (body, end int) {
	for k := i; k < hi; k++ {
		switch s.text(k) {
		case "{":
			return k, s.close(k)
		case ";":
			return -1, k
		case "(", "[":
			k = s.close(k)
		case "<": // generics and where clauses may hold "=": Iterator<Item = u8>
			k = s.skipAngles(k, hi) - 1
		case "=":
			return -1, s.stmtEnd(k, hi)
		case "}":
			return -1, max(k-1, i)
		}
	}
	return -1, max(hi-1, i)
}

// rustAssign returns the index of the "=" of an alias or const in
// [i, end], or end when there is none.
func (s *cscan) rustAssign(i, end int) int {
	for k := i; k <= end && k < len(s.toks); k++ {
		switch s.text(k) {
		case "=":
			return k
		case "(", "[", "{":
			k = s.close(k)
		}
	}
	return end
}

// rustImplType names the type an impl block is for: the last path segment
// after "for", or of the first type when there is no trait.
func (s *cscan) rustImplType(i, body int) string {
	if s.is(i, "<") {
		i = s.skipAngles(i, body)
	}
	from := i
	for k := i; k < body; k++ {
		switch s.text(k) {
		case "for":
			from = k + 1
		case "<":
			k = s.skipAngles(k, body) - 1
		case "where":
			body = k
		}
	}
	name := ""
	for k := from; k < body; k++ {
		switch {
		case s.is(k, "<"):
			return name
		case s.isIdent(k) && s.text(k) != "dyn" && s.text(k) != "mut":
			name = s.text(k)
		}
	}
	return name
}
