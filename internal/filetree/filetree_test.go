package filetree

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func walked(t *testing.T, tr *Tree, start string, fn func(string, fs.DirEntry) error) []string {
	t.Helper()
	var out []string
	err := tr.Walk(t.Context(), start, func(rel string, d fs.DirEntry) error {
		if !d.IsDir() {
			out = append(out, rel)
		}
		if fn != nil {
			return fn(rel, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var repo = map[string]string{
	".gitignore":              "build/\n*.log\n!keep.log\n/root_only.txt\nlogs/**/*.txt\ndist/**\n",
	".git/info/exclude":       "secret.txt\n",
	".git/HEAD":               "ref: refs/heads/main\n",
	"main.go":                 "package main\n",
	"a.log":                   "x",
	"keep.log":                "x",
	"root_only.txt":           "x",
	"sub/root_only.txt":       "x",
	"sub/.gitignore":          "local.txt\n!/important.log\n",
	"sub/local.txt":           "x",
	"sub/deep/local.txt":      "x",
	"sub/important.log":       "x",
	"sub/other.log":           "x",
	"other/local.txt":         "x",
	"build/out.go":            "x",
	"logs/a/b/c.txt":          "x",
	"logs/a/b/c.md":           "x",
	"dist/app.js":             "x",
	"secret.txt":              "x",
	"node_modules/m/index.js": "x",
	"vendor/v/v.go":           "x",
	".venv/lib/x.py":          "x",
	"volumes/runs/r/state":    "x",
	"web/app.ts":              "x",
	"web/app.tsx":             "x",
}

func TestWalkFollowsGitIgnoreSemantics(t *testing.T) {
	root := writeTree(t, repo)
	tr := New(root, Options{Exclude: []string{"volumes/"}})
	got := walked(t, tr, "", nil)
	want := []string{".gitignore", "keep.log", "logs/a/b/c.md", "main.go", "other/local.txt",
		"sub/.gitignore", "sub/important.log", "sub/root_only.txt", "web/app.ts", "web/app.tsx"}
	if !slices.Equal(got, want) {
		t.Errorf("walked\n  %v\nwant\n  %v", got, want)
	}
	// Ignored agrees with the walk about every file in the tree.
	for rel := range repo {
		if got := tr.Ignored(rel, false); got == slices.Contains(want, rel) {
			t.Errorf("Ignored(%q) = %v, but the walk %s it", rel, got, map[bool]string{true: "lists", false: "leaves out"}[!got])
		}
	}
	if !tr.Ignored("build", true) || tr.Ignored("build", false) {
		t.Error(`"build/" should hide the directory build, not a file called build`)
	}
	if tr.Ignored("", true) {
		t.Error("the root is never ignored")
	}
}

func TestWalkFromAnIgnoredStartAndDeeper(t *testing.T) {
	root := writeTree(t, repo)
	tr := New(root, Options{})
	if got := walked(t, tr, "build", nil); !slices.Equal(got, []string{"build/out.go"}) {
		t.Errorf("walk of the named ignored dir build = %v, want its file", got)
	}
	// Starting below the root still applies the root's and sub's rules.
	if got := walked(t, tr, "sub/deep", nil); len(got) != 0 {
		t.Errorf("walk of sub/deep = %v, want nothing (sub/.gitignore hides local.txt at any depth)", got)
	}
	if got := walked(t, tr, "./volumes/", nil); !slices.Equal(got, []string{"volumes/runs/r/state"}) {
		t.Errorf("without Options.Exclude volumes/ is walked: got %v", got)
	}
	if err := tr.Walk(t.Context(), "no/such/dir", func(string, fs.DirEntry) error { return nil }); err == nil {
		t.Error("walk of a missing start: no error")
	}
}

func TestWalkSkipDirAndSkipAll(t *testing.T) {
	root := writeTree(t, repo)
	tr := New(root, Options{})
	got := walked(t, tr, "", func(rel string, d fs.DirEntry) error {
		if d.IsDir() && rel != "web" {
			return fs.SkipDir
		}
		return nil
	})
	if want := []string{".gitignore", "keep.log", "main.go", "web/app.ts", "web/app.tsx"}; !slices.Equal(got, want) {
		t.Errorf("with SkipDir outside web: %v, want %v", got, want)
	}
	got = walked(t, tr, "", func(rel string, d fs.DirEntry) error {
		if rel == "main.go" {
			return fs.SkipAll
		}
		return nil
	})
	if want := []string{".gitignore", "keep.log", "logs/a/b/c.md", "main.go"}; !slices.Equal(got, want) {
		t.Errorf("with SkipAll at main.go: %v, want %v", got, want)
	}
}

func TestWalkStopsWithTheContext(t *testing.T) {
	tr := New(writeTree(t, repo), Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := tr.Walk(ctx, "", func(string, fs.DirEntry) error { return nil }); err == nil {
		t.Error("walk with a cancelled context: no error")
	}
}

func TestRules(t *testing.T) {
	tests := []struct {
		lines []string
		base  string
		rel   string
		isDir bool
		want  bool
	}{
		{[]string{"*.log"}, "", "a/b/x.log", false, true},
		{[]string{"*.log", "!keep.log"}, "", "keep.log", false, false},
		{[]string{"/top.txt"}, "", "top.txt", false, true},
		{[]string{"/top.txt"}, "", "a/top.txt", false, false},
		{[]string{"docs/*.md"}, "", "docs/a.md", false, true},
		{[]string{"docs/*.md"}, "", "docs/sub/a.md", false, false},
		{[]string{"**/gen/*.go"}, "", "x/y/gen/a.go", false, true},
		{[]string{"**/gen/*.go"}, "", "gen/a.go", false, true},
		{[]string{"out/"}, "", "out", true, true},
		{[]string{"out/"}, "", "out", false, false},
		{[]string{"a/**/b"}, "", "a/b", true, true},
		{[]string{"a/**/b"}, "", "a/x/y/b", true, true},
		{[]string{"dist/**"}, "", "dist", true, false},
		{[]string{"dist/**"}, "", "dist/x/y.js", false, true},
		{[]string{"local.py"}, "sub", "sub/deep/local.py", false, true},
		{[]string{"local.py"}, "sub", "other/local.py", false, false},
		{[]string{"# comment", "", `\#hash`}, "", "#hash", false, true},
		{[]string{`\!bang`}, "", "!bang", false, true},
		{[]string{"trailing\\ "}, "", "trailing ", false, true},
		{[]string{"[bad"}, "", "[bad", false, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.lines, ",")+"|"+tt.rel, func(t *testing.T) {
			var rules []rule
			for _, l := range tt.lines {
				if r, ok := parseRule(l, tt.base); ok {
					rules = append(rules, r)
				}
			}
			if got := match(rules, tt.rel, tt.isDir); got != tt.want {
				t.Errorf("match(%q) = %v, want %v", tt.rel, got, tt.want)
			}
		})
	}
}
