package filerefs

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/tools"
)

func newWorkspace(t *testing.T, files map[string]string) *tools.Workspace {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := tools.NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestExpand(t *testing.T) {
	ws := newWorkspace(t, map[string]string{
		"core/session.go":       "package core // session\n",
		"core/agent.go":         "package core // agent\n",
		"cmd/agent/main.go":     "package main\n",
		"docs/agent-notes.md":   "notes\n",
		"agent.go":              "package root\n",
		"big.txt":               lines(1500),
		"exactly.txt":           lines(1000),
		"huge.txt":              strings.Repeat(strings.Repeat("x", 99)+"\n", 3000),
		"tricky.txt":            "a ]]> b ]]]> c",
		"img.png":               "\x89PNG\x00\x00",
		"node_modules/agent.js": "ignored",
		".gitignore":            "build/\n",
		"build/agent.go":        "ignored",
	})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("root:x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(ws.Root(), filepath.Join(outside, "passwd"))
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(ws.Root(), "core", "secretlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Root(), "outdir")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		input     string
		paths     []string
		truncated []string
		warnings  []string
	}{
		{"exact path", "explain @file:core/session.go please", []string{"core/session.go"}, nil, nil},
		{"exact wins over glob", "@file:agent.go", []string{"agent.go"}, nil, nil},
		{"glob **/keyword", "@file:session.go", []string{"core/session.go"}, nil, nil},
		{"glob **/*keyword* with several matches sorted, ignored dirs skipped", "look at @file:agent",
			[]string{"agent.go", "core/agent.go", "docs/agent-notes.md"}, nil, nil},
		{"dedupe across references", "@file:session @file:core/session.go @file:session",
			[]string{"core/session.go"}, nil, nil},
		{"several references sorted together", "@file:session.go and @file:main.go",
			[]string{"cmd/agent/main.go", "core/session.go"}, nil, nil},
		{"trailing punctuation", "see @file:core/agent.go.", []string{"core/agent.go"}, nil, nil},
		{"truncation at 1000 lines", "@file:big.txt", []string{"big.txt"}, []string{"big.txt"}, nil},
		{"exactly 1000 lines is whole", "@file:exactly.txt", []string{"exactly.txt"}, nil, nil},
		{"truncation at 200 KB", "@file:huge.txt", []string{"huge.txt"}, []string{"huge.txt"}, nil},
		{"no match warns", "fix @file:nothing-here", nil, nil, []string{"@file:nothing-here matched no file in the workspace"}},
		{"escape refused", "@file:" + rel, nil, nil, []string{"@file:" + rel + " matched no file in the workspace"}},
		{"absolute outside refused", "@file:/etc/passwd", nil, nil, []string{"@file:/etc/passwd matched no file in the workspace"}},
		{"symlinked file out refused", "@file:core/secretlink @file:secretlink @file:secret", nil, nil, []string{
			"@file:core/secretlink matched no file in the workspace",
			"@file:secretlink matched no file in the workspace",
			"@file:secret matched no file in the workspace"}},
		{"symlinked dir out refused", "@file:outdir/passwd @file:passwd", nil, nil, []string{
			"@file:outdir/passwd matched no file in the workspace",
			"@file:passwd matched no file in the workspace"}},
		{"binary skipped", "@file:img.png", nil, nil, []string{"img.png is a binary file; skipped"}},
		{"match plus warning", "@file:session.go @file:zzz", []string{"core/session.go"}, nil,
			[]string{"@file:zzz matched no file in the workspace"}},
		{"not a reference inside a word", "mail ops@file:agent.go", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Expand(ws, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			var paths, truncated []string
			for _, f := range res.Files {
				paths = append(paths, f.Path)
				if f.Truncated {
					truncated = append(truncated, f.Path)
				}
			}
			if !slices.Equal(paths, tt.paths) {
				t.Errorf("paths = %q, want %q", paths, tt.paths)
			}
			if !slices.Equal(truncated, tt.truncated) {
				t.Errorf("truncated = %q, want %q", truncated, tt.truncated)
			}
			if !slices.Equal(res.Warnings, tt.warnings) {
				t.Errorf("warnings = %q, want %q", res.Warnings, tt.warnings)
			}
			if !strings.HasPrefix(res.Text, tt.input) {
				t.Errorf("text does not start with the input: %q", res.Text[:min(80, len(res.Text))])
			}
			if len(tt.paths)+len(tt.warnings) == 0 {
				if res.Text != tt.input {
					t.Errorf("text changed without references: %q", res.Text)
				}
				return
			}
			checkBlock(t, res)
		})
	}
}

// checkBlock parses the appended block as XML and compares it with Files:
// whatever the content (even "]]>"), the model gets it back exactly.
func checkBlock(t *testing.T, res Result) {
	t.Helper()
	_, block, ok := strings.Cut(res.Text, "\n\n<Context>\n")
	if !ok || !strings.HasSuffix(res.Text, "\n</Context>") {
		t.Fatalf("no <Context> block at the end of %q", res.Text)
	}
	var parsed struct {
		Files []struct {
			Path    string `xml:"path,attr"`
			Content string `xml:",chardata"`
		} `xml:"File"`
		Warnings []string `xml:"Warning"`
	}
	if err := xml.Unmarshal([]byte("<Context>\n"+block), &parsed); err != nil {
		t.Fatalf("block is not valid XML: %v\n%s", err, block)
	}
	if len(parsed.Files) != len(res.Files) || !slices.Equal(parsed.Warnings, res.Warnings) {
		t.Fatalf("block has %d files %q, want %d files %q", len(parsed.Files), parsed.Warnings, len(res.Files), res.Warnings)
	}
	for i, f := range parsed.Files {
		if f.Path != res.Files[i].Path || f.Content != res.Files[i].Content {
			t.Errorf("block file %d = %q (%d chars), want %q (%d chars)", i, f.Path, len(f.Content), res.Files[i].Path, len(res.Files[i].Content))
		}
	}
}

func TestExpandContent(t *testing.T) {
	ws := newWorkspace(t, map[string]string{
		"big.txt":    lines(1500),
		"tricky.txt": "a ]]> b ]]]> c",
		"a.go":       "package a\n",
	})
	t.Run("exact block format", func(t *testing.T) {
		res, err := Expand(ws, "read @file:a.go")
		if err != nil {
			t.Fatal(err)
		}
		want := "read @file:a.go\n\n<Context>\n<File path=\"a.go\"><![CDATA[package a\n]]></File>\n</Context>"
		if res.Text != want {
			t.Errorf("text =\n%q\nwant\n%q", res.Text, want)
		}
	})
	t.Run("CDATA escaping", func(t *testing.T) {
		res, err := Expand(ws, "@file:tricky.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Text, "<![CDATA[a ]]]]><![CDATA[> b ]]]]]><![CDATA[> c]]>") {
			t.Errorf("CDATA not split: %q", res.Text)
		}
		if res.Files[0].Content != "a ]]> b ]]]> c" {
			t.Errorf("File.Content = %q, want the raw content", res.Files[0].Content)
		}
		checkBlock(t, res)
	})
	t.Run("truncation noted", func(t *testing.T) {
		res, err := Expand(ws, "@file:big.txt")
		if err != nil {
			t.Fatal(err)
		}
		c := res.Files[0].Content
		if !strings.Contains(c, "l1000\n[... truncated: only the first 1000 lines shown") || strings.Contains(c, "l1001") {
			t.Errorf("content end = %q", c[len(c)-200:])
		}
	})
	t.Run("no references", func(t *testing.T) {
		for _, in := range []string{"", "plain text", "an @file: with no keyword", "email@file:x"} {
			res, err := Expand(ws, in)
			if err != nil || res.Text != in || len(res.Files) != 0 || len(res.Warnings) != 0 {
				t.Errorf("Expand(%q) = %+v, %v; want it unchanged", in, res, err)
			}
		}
	})
}

func TestExpandCapsFileCount(t *testing.T) {
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("pkg/file%02d.go", i)] = "package pkg\n"
	}
	ws := newWorkspace(t, files)
	res, err := Expand(ws, "@file:file")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 50 || res.Files[49].Path != "pkg/file49.go" {
		t.Errorf("got %d files, want the first 50 sorted", len(res.Files))
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "matched 60 files; only the first 50") {
		t.Errorf("warnings = %q", res.Warnings)
	}
}
