package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestListDir(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t, map[string]string{
		"b.txt": "hello", "a/x.go": "", ".hidden": "1", "empty/.keep": "",
		"proj/.gitignore": "*.log\n!keep.log\n", "proj/a.log": "", "proj/keep.log": "", "proj/src/x.go": "", "proj/node_modules/m.js": "",
	})
	mustSymlink(t, "b.txt", filepath.Join(ws.Root(), "link"))
	many := map[string]string{}
	for i := range 600 {
		many[fmt.Sprintf("many/f%03d", i)] = ""
	}
	for rel, c := range many {
		writeTestFile(t, filepath.Join(ws.Root(), rel), c)
	}
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"root default", args{}, false, "./ (7 entries)\n.hidden  (1 bytes)\na/\nb.txt  (5 bytes)\nempty/\nlink -> b.txt\nmany/\nproj/"},
		{"ignored entries named, not listed", args{"path": "proj"}, false, "proj/ (3 entries)\n.gitignore  (16 bytes)\nkeep.log  (0 bytes)\nsrc/\n\n" +
			"(not listed, as glob and grep skip them too — ignored by .gitignore or never searched: a.log, node_modules/)"},
		{"an ignored directory named as path", args{"path": "proj/node_modules"}, false, "proj/node_modules/ (1 entries)\nm.js  (0 bytes)"},
		{"subdir", args{"path": "a"}, false, "a/ (1 entries)\nx.go  (0 bytes)"},
		{"capped", args{"path": "many"}, false, "f499  (0 bytes)\n\n(showing the first 500 of 600 entries; use glob to narrow down)"},
		{"missing", args{"path": "nope"}, true, `directory "nope" does not exist`},
		{"a file", args{"path": "b.txt"}, true, `"b.txt" is a file, not a directory; use read_file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ws, "list_dir", tt.args)
			if res.IsError != tt.isError || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("got IsError=%v\n%s\nwant IsError=%v and\n%s", res.IsError, head(res.Content), tt.isError, tt.want)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{
		"main.go":                 "",
		"cmd/app/main.go":         "",
		"internal/a/a.go":         "",
		"internal/a/a_test.go":    "",
		"internal/a/deep/b.go":    "",
		"README.md":               "",
		"docs/guide.md":           "",
		".git/config":             "",
		"node_modules/x/index.js": "",
		"vendor/v/v.go":           "",
		"build/out.go":            "",
		"logs/app.log":            "",
		"keep/debug.log":          "",
		"gen/tmp.go":              "",
		"sub/gen/tmp.go":          "",
		".gitignore":              "# comment\n\nbuild/\n*.log\n/gen\n!keep/debug.log\n",
		"web/app.ts":              "",
		"web/view.tsx":            "",
		"web/style.css":           "",
		"web/.gitignore":          "*.gen.ts\n",
		"web/api.gen.ts":          "",
	})
	tests := []struct {
		name, pattern string
		isError       bool
		want          string
	}{
		{"double star", "**/*.go", false, "cmd/app/main.go\ninternal/a/a.go\ninternal/a/a_test.go\ninternal/a/deep/b.go\nmain.go\nsub/gen/tmp.go"},
		{"single star is one segment", "*.go", false, "main.go"},
		{"literal prefix", "internal/**/*_test.go", false, "internal/a/a_test.go"},
		{"star in the middle", "cmd/*/main.go", false, "cmd/app/main.go"},
		{"trailing double star", "docs/**", false, "docs/guide.md"},
		{"leading ./", "./internal/a/*.go", false, "internal/a/a.go\ninternal/a/a_test.go"},
		{"exact file", "README.md", false, "README.md"},
		{"absolute inside", filepath.Join(ws.Root(), "docs", "*.md"), false, "docs/guide.md"},
		{"ignored dirs, .gitignore and its negation", "**/*.log", false, "keep/debug.log"},
		{"braces, and a nested .gitignore", "**/*.{ts,tsx}", false, "web/app.ts\nweb/view.tsx"},
		{"a skipped dir named as the prefix is searched", "node_modules/**/*.js", false, "node_modules/x/index.js"},
		{"no match", "**/*.rs", false, `no files match "**/*.rs"`},
		{"missing dir", "nope/**", false, "no files match"},
		{"dotdot refused", "../**/*.go", true, "outside the workspace"},
		{"absolute outside refused", "/etc/*", true, "outside the workspace"},
		{"bad pattern", "[a-", true, "bad glob pattern"},
		{"empty", "  ", true, "pattern is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ws, "glob", args{"pattern": tt.pattern})
			if res.IsError != tt.isError || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("got IsError=%v\n%s\nwant IsError=%v and\n%s", res.IsError, res.Content, tt.isError, tt.want)
			}
			if tt.want == "no files match" || strings.HasPrefix(tt.want, "no files") {
				return
			}
			if !tt.isError && res.Content != tt.want {
				t.Errorf("content = %q, want exactly %q", res.Content, tt.want)
			}
		})
	}
}

func TestGlobCap(t *testing.T) {
	files := map[string]string{}
	for i := range 130 {
		files[fmt.Sprintf("d/%03d.txt", i)] = ""
	}
	ws := newTestWorkspace(t, files)
	res := run(t, ws, "glob", args{"pattern": "**/*.txt"})
	lines := strings.Split(res.Content, "\n")
	if lines[0] != "d/000.txt" || lines[99] != "d/099.txt" {
		t.Errorf("first lines = %q..%q, want sorted d/000.txt..d/099.txt", lines[0], lines[99])
	}
	if !strings.HasSuffix(res.Content, "(showing the first 100 of 130 files; use a more specific pattern)") {
		t.Errorf("no cap note:\n%s", res.Content[len(res.Content)-200:])
	}
}

func TestGrep(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{
		"a.go":              "package a\n\nfunc Alpha() {}\n// TODO fix\n",
		"sub/b.go":          "package sub\nfunc Beta() {}\n",
		"sub/c.txt":         "func in text\n",
		"long.txt":          "needle " + strings.Repeat("x", 500) + "\n",
		"bin.dat":           "needle\x00binary",
		"node_modules/m.js": "func needle\n",
		"build/gen.go":      "func Generated() {}\n",
		".gitignore":        "build/\n",
	})
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"whole workspace", args{"pattern": `func \w+\(`}, false, "a.go:3: func Alpha() {}\nsub/b.go:2: func Beta() {}"},
		{"case insensitive", args{"pattern": "(?i)todo"}, false, "a.go:4: // TODO fix"},
		{"path dir", args{"pattern": "func", "path": "sub"}, false, "sub/b.go:2: func Beta() {}\nsub/c.txt:1: func in text"},
		{"path file", args{"pattern": "package", "path": "sub/b.go"}, false, "sub/b.go:1: package sub"},
		{"glob by name", args{"pattern": "func", "glob": "*.txt"}, false, "sub/c.txt:1: func in text"},
		{"glob with braces", args{"pattern": "func", "glob": "*.{txt,md}"}, false, "sub/c.txt:1: func in text"},
		{"glob by path", args{"pattern": "package", "glob": "sub/**/*.go"}, false, "sub/b.go:1: package sub"},
		{"line cut", args{"pattern": "needle"}, false, "long.txt:1: needle " + strings.Repeat("x", 293) + " [...]"},
		{"no match", args{"pattern": "zzz"}, false, `no matches for "zzz" in .`},
		{"bad regexp", args{"pattern": "func("}, true, "invalid regular expression"},
		{"missing path", args{"pattern": "x", "path": "nope"}, true, `"nope" does not exist`},
		{"binary file named", args{"pattern": "needle", "path": "bin.dat"}, true, "binary"},
		{"bad glob", args{"pattern": "x", "glob": "[z-"}, true, "bad glob pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ws, "grep", tt.args)
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v: %s", res.IsError, res.Content)
			}
			if tt.isError || strings.HasPrefix(tt.want, "no matches") {
				if !strings.Contains(res.Content, tt.want) {
					t.Errorf("content %q does not contain %q", res.Content, tt.want)
				}
				return
			}
			if res.Content != tt.want {
				t.Errorf("content =\n%s\nwant\n%s", res.Content, tt.want)
			}
		})
	}
}

func TestGrepCap(t *testing.T) {
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	ws := newTestWorkspace(t, map[string]string{"a.txt": b.String(), "z.txt": "hit z\n"})
	res := run(t, ws, "grep", args{"pattern": "^hit"})
	lines := strings.Split(res.Content, "\n")
	if lines[0] != "a.txt:1: hit 0" || lines[99] != "a.txt:100: hit 99" {
		t.Errorf("lines = %q .. %q", lines[0], lines[99])
	}
	if !strings.HasSuffix(res.Content, "\n\n(showing the first 100 matches; there are more: narrow the pattern, path or glob)") {
		t.Errorf("no cap note: %q", res.Content[len(res.Content)-200:])
	}
}
