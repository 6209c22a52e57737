package repomap

import (
	"fmt"
	"strings"
	"testing"
)

// budgetRepo has 40 Go files, each defining a few functions and using the
// ones of the previous files, so ranks differ and the map is far larger
// than small budgets.
func budgetRepo(t *testing.T) string {
	files := map[string]string{"go.mod": "module example.com/b\n"}
	for i := range 40 {
		var b strings.Builder
		fmt.Fprintf(&b, "package b\n\n// Func%dA does the first thing of file %d.\nfunc Func%dA(x int, name string) (int, error) {\n", i, i, i)
		for j := 0; j < i; j++ {
			fmt.Fprintf(&b, "\tFunc%dA(x, name)\n", j)
		}
		fmt.Fprintf(&b, "\treturn 0, nil\n}\n\ntype Type%d struct{ v int }\n\nfunc (t *Type%d) Method%d() string { return \"\" }\n", i, i, i)
		files[fmt.Sprintf("pkg%02d/file%02d.go", i%5, i)] = b.String()
	}
	return writeTree(t, files)
}

func TestRenderBudgetRespected(t *testing.T) {
	m := build(t, Options{Root: budgetRepo(t), Tokens: -1})
	if m.Text != "" {
		t.Fatalf("Tokens -1 rendered text: %q", m.Text)
	}
	full := Render(m.Files, 1<<20)
	prev := 0
	for _, budget := range []int{1, 8, 32, 64, 128, 256, 512, 1024, 4096} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			text := Render(m.Files, budget)
			got := EstimateTokens(text)
			if got > budget {
				t.Fatalf("rendered %d tokens for a budget of %d:\n%s", got, budget, text)
			}
			if len(text) < prev {
				t.Errorf("budget %d rendered less (%d chars) than a smaller budget (%d)", budget, len(text), prev)
			}
			prev = len(text)
			// Budgets the whole map does not fit in are mostly used.
			if budget >= 64 && EstimateTokens(full) > budget && got < budget*3/4 {
				t.Errorf("budget %d used only %d tokens", budget, got)
			}
			if budget >= 32 && !strings.Contains(text, "func Func0A(x int, name string) (int, error)") {
				t.Errorf("the most referenced function is missing from a %d-token map:\n%s", budget, text)
			}
		})
	}
	if got := Render(m.Files, 0); got != "" {
		t.Errorf("budget 0 rendered %q", got)
	}
}

func TestBuildDefaultBudget(t *testing.T) {
	m := build(t, Options{Root: budgetRepo(t)})
	if m.Tokens == 0 || m.Tokens > DefaultTokens || m.Tokens != EstimateTokens(m.Text) {
		t.Errorf("Tokens = %d for text of %d estimated tokens, want 0 < n <= %d", m.Tokens, EstimateTokens(m.Text), DefaultTokens)
	}
}

func TestRenderOutline(t *testing.T) {
	files := []File{
		{Path: "a.py", Symbols: []Symbol{
			{Kind: KindType, Name: "A", Signature: "class A", StartLine: 1, EndLine: 20, Rank: 0.1},
			{Kind: KindMethod, Name: "x", Signature: "def x(self)", StartLine: 2, EndLine: 3},
			{Kind: KindMethod, Name: "y", Signature: "def y(self)", StartLine: 5, EndLine: 6, Rank: 0.5},
			{Kind: KindMethod, Name: "z", Signature: "def z(self)", StartLine: 8, EndLine: 9},
			{Kind: KindFunc, Name: "f", Signature: "def f()", StartLine: 22, EndLine: 23},
		}},
		{Path: "empty.py"},
	}
	tests := []struct {
		tokens int
		want   string
	}{
		{8, ""}, // not even the best symbol with its class fits
		{10, "a.py:\n  class A\n⋮\n    def y(self)\n⋮\n"},
		{100, "a.py:\n  class A\n    def x(self)\n    def y(self)\n    def z(self)\n  def f()\nempty.py\n"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tokens), func(t *testing.T) {
			if got := Render(files, tt.tokens); got != tt.want {
				t.Errorf("Render(%d) =\n%s\nwant\n%s", tt.tokens, got, tt.want)
			}
		})
	}
}

// TestMapGolden renders the map of a small multi-language project.
func TestMapGolden(t *testing.T) {
	m := build(t, Options{Root: "testdata/repo", Tokens: 2048})
	var b strings.Builder
	b.WriteString(m.Text)
	b.WriteString("\n-- imports --\n")
	for _, f := range m.Files {
		if len(f.Imports) > 0 {
			fmt.Fprintf(&b, "%s -> %s\n", f.Path, strings.Join(f.Imports, ", "))
		}
	}
	checkGolden(t, "testdata/repo.golden", b.String())
}
