package projectdoc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	long := strings.Repeat("- keep each line short and clear\n", 2000) // 66 000 bytes
	tests := []struct {
		name     string
		setup    func(t *testing.T, ws string)
		found    bool
		doc      string // the name read
		contains string
		err      string
	}{
		{name: "none", setup: func(*testing.T, string) {}},
		{name: "AGENTS.md", setup: func(t *testing.T, ws string) { write(t, ws, "AGENTS.md", "Run make test.\n") },
			found: true, doc: "AGENTS.md", contains: "Run make test."},
		{name: "CLAUDE.md alone", setup: func(t *testing.T, ws string) { write(t, ws, "CLAUDE.md", "Use tabs.\n") },
			found: true, doc: "CLAUDE.md", contains: "Use tabs."},
		{name: "AGENTS.md first", setup: func(t *testing.T, ws string) {
			write(t, ws, "AGENTS.md", "from agents\n")
			write(t, ws, "CLAUDE.md", "from claude\n")
		}, found: true, doc: "AGENTS.md", contains: "from agents"},
		{name: "CLAUDE.md a link to AGENTS.md in docs", setup: func(t *testing.T, ws string) {
			if err := os.Mkdir(filepath.Join(ws, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(ws, "docs"), "AGENTS.md", "linked\n")
			if err := os.Symlink("docs/AGENTS.md", filepath.Join(ws, "CLAUDE.md")); err != nil {
				t.Fatal(err)
			}
		}, found: true, doc: "CLAUDE.md", contains: "linked"},
		{name: "a link out of the workspace", setup: func(t *testing.T, ws string) {
			out := filepath.Join(t.TempDir(), "secret.md")
			if err := os.WriteFile(out, []byte("secret"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, filepath.Join(ws, "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
		}, err: "outside the workspace: refused"},
		{name: "a FIFO", setup: func(t *testing.T, ws string) {
			if err := syscall.Mkfifo(filepath.Join(ws, "AGENTS.md"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, err: "not a regular file"},
		{name: "a directory", setup: func(t *testing.T, ws string) {
			if err := os.Mkdir(filepath.Join(ws, "AGENTS.md"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, err: "not a regular file"},
		{name: "too long", setup: func(t *testing.T, ws string) { write(t, ws, "AGENTS.md", long) },
			found: true, doc: "AGENTS.md", contains: "[AGENTS.md is 66000 bytes: only its first 32736 are included here; read the file for the rest]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			tc.setup(t, ws)
			d, found, err := Read(ws)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || found != tc.found || d.Name != tc.doc {
				t.Fatalf("Read = %+v, %v, %v", d, found, err)
			}
			if !strings.Contains(d.Body(), tc.contains) {
				t.Errorf("body lacks %q:\n%.300s", tc.contains, d.Body())
			}
			if len(d.Text) > MaxBytes || (d.Cut() && !strings.HasSuffix(d.Text, "\n")) {
				t.Errorf("text of %d bytes, cut %v, not at a line end", len(d.Text), d.Cut())
			}
		})
	}
	if _, found, err := Read(""); found || err != nil {
		t.Errorf(`Read("") = %v, %v`, found, err)
	}
}
