package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{"old.txt": "old\n", "dir/keep": ""})
	script := filepath.Join(ws.Root(), "run.sh")
	writeTestFile(t, script, "#!/bin/sh\n")
	if err := os.Chmod(script, 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, content string
		isError             bool
		want                string
		wantMode            os.FileMode
	}{
		{"new file", "new.txt", "a\nb\n", false, "wrote new.txt: 4 bytes, 2 lines", 0o644},
		{"parent dirs created", "x/y/z.go", "package z", false, "wrote x/y/z.go: 9 bytes, 1 line", 0o644},
		{"overwrite", "old.txt", "new", false, "wrote old.txt", 0o644},
		{"keeps mode", "run.sh", "#!/bin/sh\necho hi\n", false, "wrote run.sh", 0o750},
		{"empty content", "empty.txt", "", false, "0 bytes, 0 lines", 0o644},
		{"a directory", "dir", "x", true, `could not write "dir"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ws, "write_file", args{"path": tt.path, "content": tt.content})
			if res.IsError != tt.isError || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("got %+v, want IsError=%v and %q", res, tt.isError, tt.want)
			}
			if tt.isError {
				return
			}
			abs := filepath.Join(ws.Root(), tt.path)
			got, err := os.ReadFile(abs)
			if err != nil || string(got) != tt.content {
				t.Errorf("file = %q, %v; want %q", got, err, tt.content)
			}
			if fi, _ := os.Stat(abs); fi.Mode().Perm() != tt.wantMode {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.wantMode)
			}
			if len(res.Files) != 1 || !res.Files[0].Changed || res.Files[0].Path != tt.path {
				t.Errorf("Files = %+v", res.Files)
			}
			assertNoTempFiles(t, filepath.Dir(abs))
		})
	}
}

func TestEditFile(t *testing.T) {
	const src = "package a\n\nfunc A() {\n\treturn\n}\n\nfunc B() {\n\treturn\n}\n"
	tests := []struct {
		name            string
		path, old, new_ string
		isError         bool
		want            string
		wantFile        string
	}{
		{"unique replace", "a.go", "func A() {\n\treturn\n}", "func A() {\n\tprintln()\n}", false,
			"edited a.go: replaced 3 lines with 3 lines at line 3",
			"package a\n\nfunc A() {\n\tprintln()\n}\n\nfunc B() {\n\treturn\n}\n"},
		{"delete", "a.go", "\nfunc B() {\n\treturn\n}\n", "", false, "edited a.go", "package a\n\nfunc A() {\n\treturn\n}\n"},
		{"zero occurrences", "a.go", "func C()", "x", true, "0 occurrences", src},
		{"whitespace hint", "a.go", "    return", "x", true, "whitespace, indentation", src},
		{"two occurrences", "a.go", "\treturn\n", "x", true, "occurs 2 times", src},
		{"identical", "a.go", "func A()", "func A()", true, "identical", src},
		{"empty old creates a missing file", "new/b.go", "", "package b\n", false, "created new/b.go: 1 line", "package b\n"},
		{"empty old on an existing file", "a.go", "", "x", true, "already exists", src},
		{"missing file", "nope.go", "x", "y", true, `file "nope.go" does not exist`, ""},
		{"binary", "bin", "a", "b", true, "binary", "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newTestWorkspace(t, map[string]string{"a.go": src, "bin": "a\x00b"})
			res := run(t, ws, "edit_file", args{"path": tt.path, "old_string": tt.old, "new_string": tt.new_})
			if res.IsError != tt.isError || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("got %+v, want IsError=%v and %q", res, tt.isError, tt.want)
			}
			got, err := os.ReadFile(filepath.Join(ws.Root(), tt.path))
			if tt.wantFile == "" {
				if err == nil {
					t.Errorf("file was created: %q", got)
				}
				return
			}
			if string(got) != tt.wantFile {
				t.Errorf("file = %q, want %q", got, tt.wantFile)
			}
			if !tt.isError && (len(res.Files) != 1 || !res.Files[0].Changed) {
				t.Errorf("Files = %+v", res.Files)
			}
			assertNoTempFiles(t, filepath.Dir(filepath.Join(ws.Root(), tt.path)))
		})
	}
}

func TestEditFileKeepsMode(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{"x.sh": "echo a\n"})
	p := filepath.Join(ws.Root(), "x.sh")
	if err := os.Chmod(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if res := run(t, ws, "edit_file", args{"path": "x.sh", "old_string": "a", "new_string": "b"}); res.IsError {
		t.Fatal(res.Content)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode = %v, want 0700", fi.Mode().Perm())
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}
