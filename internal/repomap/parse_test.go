package repomap

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestParseGolden runs ParseFile over every source file in testdata/parse
// and compares symbols (kind, name, line range, signature, doc) and raw
// imports with the .golden file beside it.
func TestParseGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/parse/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			syms, imports, err := ParseFile(in, src)
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			got := formatParse(syms, imports)
			checkGolden(t, in+".golden", got)
		})
	}
	if n < 7 {
		t.Fatalf("found %d inputs in testdata/parse, want one per language at least", n)
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept):\n%s", path, lineDiff(string(want), got))
	}
}

func formatParse(syms []Symbol, imports []string) string {
	var b strings.Builder
	for _, s := range syms {
		fmt.Fprintf(&b, "%d-%d %s %s\n  sig: %s\n", s.StartLine, s.EndLine, s.Kind, s.Name, s.Signature)
		if s.Doc != "" {
			fmt.Fprintf(&b, "  doc: %s\n", s.Doc)
		}
	}
	for _, imp := range imports {
		fmt.Fprintf(&b, "import %s\n", imp)
	}
	return b.String()
}

// lineDiff shows the first differing lines of two texts.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
