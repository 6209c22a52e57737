package orchestrator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The attempts' results and spans on the record have one owner,
// attempts.Results, whose transitions refuse what cannot happen: no other
// code of the orchestrator reaches a result to change it. Without the
// record's helpers that hand one out (TaskInfo.Result) or open and close
// spans, and without indexing TaskInfo.Results, what is left is reading
// copies (for _, res := range in.Results), which changes nothing.
func TestOneOwnerOfTheResults(t *testing.T) {
	helpers := map[string]bool{"Result": true, "OpenSpan": true, "OpenAttemptSpan": true, "CloseSpan": true, "CloseAttemptSpan": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path == "attempts":
			return filepath.SkipDir // the owner
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		copies := map[ast.Expr]bool{} // the .Results ranged over by value
		ast.Inspect(f, func(n ast.Node) bool {
			if r, ok := n.(*ast.RangeStmt); ok && r.Value != nil && isBlank(r.Key) {
				copies[r.X] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if s, ok := n.Fun.(*ast.SelectorExpr); ok && helpers[s.Sel.Name] {
					t.Errorf("%s: %s( changes an attempt's result or span: tell attempts.Results what happened instead", fset.Position(n.Pos()), s.Sel.Name)
				}
			case *ast.SelectorExpr:
				if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "attempts" {
					return true // the owner's type
				}
				if n.Sel.Name == "Results" && !copies[n] {
					t.Errorf("%s: .Results reached other than by copies: read them with for _, res := range, or through attempts.Results", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isBlank(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return e == nil || ok && id.Name == "_"
}
