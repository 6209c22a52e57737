package repomap

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// parseGo uses go/parser. A file with syntax errors still yields the
// declarations parsed before (and around) the errors.
func parseGo(src []byte) parsed {
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if f == nil {
		return parsed{}
	}
	g := goFile{src: src, tf: fset.File(f.Pos())}
	var p parsed
	for _, imp := range f.Imports {
		if path, err := strconv.Unquote(imp.Path.Value); err == nil {
			p.imports = append(p.imports, path)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			p.syms = append(p.syms, g.funcDecl(d))
		case *ast.GenDecl:
			p.syms = g.genDecl(p.syms, d)
		}
	}
	p.refs = goRefs(f)
	return p
}

// Go references are recorded by how they name something, so ranking can
// resolve them the way the compiler does (see goRefKey):
//
//	Name         a bare identifier: something of the same package
//	.Name        the selector of x.Name: a method or field of any package
//	path\x00Name a qualified identifier pkg.Name, with pkg's import path
//
// so errors.New credits errors/errors.go, and unsafe.Pointer credits
// unsafe, not every type called Pointer.
func goRefs(f *ast.File) []string {
	pkgs := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := goPackageName(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name != "_" && name != "." {
			pkgs[name] = path
		}
	}
	refs := make([]string, 0, 256)
	add := func(prefix, name string) {
		if len(name) > 1 && len(name) <= maxIdentLen {
			refs = append(refs, prefix+name)
		}
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if path, ok := pkgs[x.Name]; ok {
					add(path+"\x00", n.Sel.Name)
					return false
				}
			}
			ast.Inspect(n.X, visit)
			add(".", n.Sel.Name)
			return false
		case *ast.Ident:
			add("", n.Name)
		}
		return true
	}
	ast.Inspect(f, visit)
	return refs
}

// goPackageName guesses the name a package is imported under from its
// path: the last element, without a major-version element (/v2), a
// gopkg.in version (.v3) or a go- prefix.
func goPackageName(path string) string {
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = elems[len(elems)-2]
	}
	if i := strings.Index(name, ".v"); i > 0 {
		name = name[:i]
	}
	name = strings.TrimPrefix(name, "go-")
	return strings.ReplaceAll(name, "-", "_")
}

type goFile struct {
	tf  *token.File
	src []byte
}

func (g goFile) line(p token.Pos) int {
	if !p.IsValid() || g.tf == nil {
		return 0
	}
	return g.tf.Line(p)
}

// text returns the source between two positions, collapsed to one line.
func (g goFile) text(from, to token.Pos) string {
	if g.tf == nil || !from.IsValid() || !to.IsValid() {
		return ""
	}
	a, b := g.tf.Offset(from), g.tf.Offset(to)
	if a < 0 || b > len(g.src) || a >= b {
		return ""
	}
	return collapse(string(g.src[a:b]))
}

func (g goFile) sym(kind, name string, doc *ast.CommentGroup, from, to token.Pos, sig string) Symbol {
	s := Symbol{Kind: kind, Name: name, Signature: sig, StartLine: g.line(from), EndLine: g.line(to)}
	if doc != nil {
		s.Doc = firstDocLine(doc.Text())
	}
	if s.EndLine < s.StartLine {
		s.EndLine = s.StartLine
	}
	return s
}

func (g goFile) funcDecl(d *ast.FuncDecl) Symbol {
	kind := KindFunc
	if d.Recv != nil && len(d.Recv.List) > 0 {
		kind = KindMethod
	}
	sigEnd := d.Type.End()
	if d.Body != nil {
		sigEnd = d.Body.Lbrace
	}
	return g.sym(kind, d.Name.Name, d.Doc, d.Pos(), d.End(), g.text(d.Pos(), sigEnd))
}

func (g goFile) genDecl(out []Symbol, d *ast.GenDecl) []Symbol {
	single := len(d.Specs) == 1 && !d.Lparen.IsValid()
	for _, spec := range d.Specs {
		switch sp := spec.(type) {
		case *ast.TypeSpec:
			out = g.typeSpec(out, d, sp, single)
		case *ast.ValueSpec:
			kind := KindVar
			if d.Tok == token.CONST {
				kind = KindConst
			}
			doc := sp.Doc
			from := sp.Pos()
			if single {
				doc, from = d.Doc, d.Pos()
			}
			for _, n := range sp.Names {
				if n.Name == "_" {
					continue
				}
				out = append(out, g.sym(kind, n.Name, doc, from, sp.End(), g.valueSig(d.Tok, sp)))
			}
		}
	}
	return out
}

// valueSig is "const Name Type = value" when short, else without the value.
func (g goFile) valueSig(tok token.Token, sp *ast.ValueSpec) string {
	full := tok.String() + " " + g.text(sp.Pos(), sp.End())
	if len(full) <= 100 && g.line(sp.Pos()) == g.line(sp.End()) {
		return full
	}
	end := sp.Names[len(sp.Names)-1].End()
	if sp.Type != nil {
		end = sp.Type.End()
	}
	return tok.String() + " " + g.text(sp.Pos(), end)
}

func (g goFile) typeSpec(out []Symbol, d *ast.GenDecl, sp *ast.TypeSpec, single bool) []Symbol {
	doc, from := sp.Doc, sp.Pos()
	if single {
		doc, from = d.Doc, d.Pos()
	}
	// Struct and interface bodies are elided: the header says what it is.
	sigEnd := sp.End()
	switch t := sp.Type.(type) {
	case *ast.StructType:
		sigEnd = t.Fields.Opening
	case *ast.InterfaceType:
		sigEnd = t.Methods.Opening
	}
	sig := "type " + g.text(sp.Pos(), sigEnd)
	if !sigEnd.IsValid() || sigEnd == sp.Pos() {
		sig = "type " + sp.Name.Name
	}
	out = append(out, g.sym(KindType, sp.Name.Name, doc, from, sp.End(), strings.TrimSpace(sig)))
	if it, ok := sp.Type.(*ast.InterfaceType); ok && it.Methods != nil {
		for _, m := range it.Methods.List {
			if _, isFunc := m.Type.(*ast.FuncType); !isFunc || len(m.Names) == 0 {
				continue
			}
			out = append(out, g.sym(KindMethod, m.Names[0].Name, m.Doc, m.Pos(), m.End(), g.text(m.Pos(), m.End())))
		}
	}
	return out
}
