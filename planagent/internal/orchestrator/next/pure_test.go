package next

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pureImports are the standard packages next may import: computation on
// values, nothing that reads or writes. fmt is not among them (it prints to
// os.Stdout and brings os in); time is there for its types and arithmetic,
// the clock being read by the orchestrator and passed in (and
// TestNoClockRead keeps it so).
var pureImports = []string{"cmp", "errors", "iter", "maps", "math", "slices", "sort", "strconv", "strings", "time", "unicode", "unicode/utf8"}

// ioPackages are what would let next do I/O.
var ioPackages = []string{"os", "io/fs", "os/exec", "net", "net/http", "syscall", "path/filepath", "io/ioutil", "os/signal", "log", "log/slog", "fmt"}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list next's imports: %v", err)
	}
	out, err := exec.Command(gobin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// TestPure fails when the package could do I/O: it imports only the pure
// standard packages above, and of everything it brings in (go list -deps),
// what those packages do not bring in themselves is next alone: no I/O
// package, none of this module's packages (they read files, run processes
// or call servers).
func TestPure(t *testing.T) {
	self := goList(t, "-f", "{{.ImportPath}}", ".")[0]
	imports := goList(t, "-f", `{{join .Imports " "}}`, ".")
	for _, p := range imports {
		if !slices.Contains(pureImports, p) {
			t.Errorf("next imports %s, which is not one of the pure standard packages %v", p, pureImports)
		}
	}
	deps := goList(t, "-deps", ".")
	var pure []string
	for _, p := range imports {
		if slices.Contains(pureImports, p) {
			pure = append(pure, p)
		}
	}
	theirs := map[string]bool{}
	if len(pure) > 0 {
		for _, p := range goList(t, append([]string{"-deps"}, pure...)...) {
			theirs[p] = true
		}
	}
	for _, p := range deps {
		switch {
		case p == self || theirs[p]:
			// next, or what a pure package brings in for its own use
			// (time's zone files reach syscall: that is time's, not next's)
		case slices.Contains(ioPackages, p):
			t.Errorf("next brings in the I/O package %s", p)
		case strings.HasPrefix(p, "github.com/codeagent/"):
			t.Errorf("next brings in %s, one of this module's packages", p)
		default:
			t.Errorf("next brings in %s beyond the pure standard packages", p)
		}
	}
	for _, p := range ioPackages {
		if slices.Contains(imports, p) {
			t.Errorf("next imports the I/O package %s", p)
		}
	}
}

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
