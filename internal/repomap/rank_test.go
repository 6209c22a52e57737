package repomap

import (
	"fmt"
	"strings"
	"testing"
)

// rankRepo is a small Python repository whose reference graph is known:
// core.py defines ConfigLoader, which four files use; helpers.py defines
// parse_helper_value, used once; leaf.py and main.py define nothing anyone uses.
func rankRepo(t *testing.T) string {
	files := map[string]string{
		"core.py":    "class ConfigLoader:\n    def load_settings(self):\n        return 1\n",
		"helpers.py": "def parse_helper_value(x):\n    return x\n",
		"leaf.py":    "def leaf_only():\n    pass\n",
		"main.py":    "from core import ConfigLoader\nfrom helpers import parse_helper_value\n\ndef main():\n    ConfigLoader().load_settings()\n    parse_helper_value(1)\n",
	}
	for i := range 3 {
		files[fmt.Sprintf("user%d.py", i)] = fmt.Sprintf("from core import ConfigLoader\n\ndef use%d():\n    return ConfigLoader()\n", i)
	}
	return writeTree(t, files)
}

func TestRankMostReferencedFirst(t *testing.T) {
	m := build(t, Options{Root: rankRepo(t)})
	if got := m.Files[0].Path; got != "core.py" {
		t.Fatalf("first file = %s, want core.py (referenced by 4 files); order %v", got, paths(m))
	}
	if m.Files[1].Path != "helpers.py" {
		t.Errorf("second file = %s, want helpers.py (referenced once); order %v", m.Files[1].Path, paths(m))
	}
	core := m.Files[0]
	if core.Symbols[0].Name != "ConfigLoader" || core.Symbols[0].Rank <= 0 {
		t.Errorf("ConfigLoader rank = %v, want > 0", core.Symbols[0].Rank)
	}
	sum := 0.0
	for _, f := range m.Files {
		sum += f.Rank
	}
	if sum < 0.99 || sum > 1.01 {
		t.Errorf("file ranks sum to %v, want 1 (a probability distribution)", sum)
	}
	// The outline starts with the best symbol.
	if !strings.HasPrefix(m.Text, "core.py:\n  class ConfigLoader\n") {
		t.Errorf("map text does not start with core.py's ConfigLoader:\n%s", m.Text)
	}
}

func TestRankBoostChangesOrder(t *testing.T) {
	root := rankRepo(t)
	tests := []struct {
		name  string
		boost []string
		first string
	}{
		{"no boost", nil, "core.py"},
		{"file path", []string{"leaf.py"}, "leaf.py"},
		{"at-file reference in a goal", []string{"please fix @file:helpers.py today"}, "helpers.py"},
		{"file stem word", []string{"refactor the leaf module"}, "leaf.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := build(t, Options{Root: root, Boost: tt.boost})
			if got := m.Files[0].Path; got != tt.first {
				t.Errorf("first file = %s, want %s; order %v", got, tt.first, paths(m))
			}
		})
	}
}

func TestRankIdentifierBoost(t *testing.T) {
	// Two files each referenced once; naming one's identifier in the goal
	// puts its definer first.
	root := writeTree(t, map[string]string{
		"a.py":   "def alpha_function_name():\n    pass\n",
		"b.py":   "def beta_function_name():\n    pass\n",
		"use.py": "alpha_function_name()\nbeta_function_name()\n",
	})
	for _, tt := range []struct{ word, first string }{{"alpha_function_name", "a.py"}, {"beta_function_name", "b.py"}} {
		t.Run(tt.word, func(t *testing.T) {
			m := build(t, Options{Root: root, Boost: []string{"rename " + tt.word}})
			if m.Files[0].Path != tt.first {
				t.Errorf("first = %s, want %s; order %v", m.Files[0].Path, tt.first, paths(m))
			}
		})
	}
}

func TestRankGoScopesUnexportedNames(t *testing.T) {
	// An unexported name can only be used inside its own package: helper in
	// b/ must not make a/ (which also defines helper) important.
	root := writeTree(t, map[string]string{
		"go.mod":    "module example.com/m\n",
		"a/a.go":    "package a\n\nfunc helper() {}\n",
		"b/b.go":    "package b\n\nfunc helper() {}\n",
		"b/use.go":  "package b\n\nfunc use() { helper(); helper() }\n",
		"c/c.go":    "package c\n\nimport \"example.com/m/b\"\n\nfunc Exported() {}\n\nvar _ = b.X\n",
		"b/x.go":    "package b\n\nvar X = 1\n",
		"d/main.go": "package main\n\nimport \"example.com/m/c\"\n\nfunc main() { c.Exported() }\n",
	})
	m := build(t, Options{Root: root})
	a, b := fileOf(m, "a/a.go"), fileOf(m, "b/b.go")
	if a.Symbols[0].Rank != 0 || b.Symbols[0].Rank <= 0 {
		t.Errorf("helper ranks: a/a.go %v (want 0), b/b.go %v (want > 0)", a.Symbols[0].Rank, b.Symbols[0].Rank)
	}
	if c := fileOf(m, "c/c.go"); len(c.Imports) != 1 || c.Imports[0] != "b" {
		t.Errorf("c/c.go imports = %v, want [b]", c.Imports)
	}
}
