package next

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What next may import (computation on values, no I/O) is depguard's rule
// next-is-pure in .golangci.yml; this file keeps it from reading the clock.

// TestNoClockRead fails when next reads the clock or waits: the time it
// decides on is the event's.
func TestNoClockRead(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTicker", "NewTimer"}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && slices.Contains(banned, sel.Sel.Name) {
				t.Errorf("%s: time.%s: next must not read the clock or wait; the time comes in with the event", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
