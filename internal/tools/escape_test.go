package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathEscapesRefused sends every path-taking tool every way out of the
// workspace and checks the call is refused and nothing outside changed.
func TestPathEscapesRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	writeTestFile(t, secret, "secret needle\n")
	ws := newTestWorkspace(t, map[string]string{"in.txt": "inside\n"})
	mustSymlink(t, secret, filepath.Join(ws.Root(), "filelink"))
	mustSymlink(t, outside, filepath.Join(ws.Root(), "dirlink"))

	escapes := map[string]string{
		"dotdot":           "../" + filepath.Base(outside) + "/secret.txt",
		"absolute outside": secret,
		"symlinked file":   "filelink",
		"symlinked dir":    "dirlink/secret.txt",
	}
	for how, p := range escapes {
		created := filepath.Join(filepath.Dir(p), "new.txt")
		if how == "symlinked file" {
			created = p
		}
		calls := []struct {
			tool string
			args map[string]any
		}{
			{"read_file", args{"path": p}},
			{"write_file", args{"path": p, "content": "pwned"}},
			{"edit_file", args{"path": p, "old_string": "secret", "new_string": "pwned"}},
			{"edit_file", args{"path": created, "old_string": "", "new_string": "pwned"}},
			{"list_dir", args{"path": filepath.Dir(p)}},
			{"grep", args{"pattern": "needle", "path": p}},
		}
		for _, c := range calls {
			t.Run(how+"/"+c.tool, func(t *testing.T) {
				if c.tool == "list_dir" && how == "symlinked file" {
					c.args["path"] = "dirlink" // filelink's Dir is the root itself
				}
				res := run(t, ws, c.tool, c.args)
				if !res.IsError || !strings.Contains(res.Content, "is outside the workspace "+ws.Root()) {
					t.Fatalf("got IsError=%v %q, want a refusal naming the workspace", res.IsError, res.Content)
				}
				if strings.Contains(res.Content, "secret needle") {
					t.Errorf("outside content leaked: %q", res.Content)
				}
			})
		}
	}
	t.Run("glob", func(t *testing.T) {
		for _, pat := range []string{"../**", secret, "dirlink/*"} {
			res := run(t, ws, "glob", args{"pattern": pat})
			if !res.IsError || !strings.Contains(res.Content, "is outside the workspace "+ws.Root()) {
				t.Errorf("glob %q = %q, want a refusal", pat, res.Content)
			}
		}
	})
	t.Run("grep walk skips links out", func(t *testing.T) {
		res := run(t, ws, "grep", args{"pattern": "needle"})
		if res.IsError || strings.Contains(res.Content, "secret") {
			t.Errorf("grep read through a symlink out of the workspace: %q", res.Content)
		}
	})
	t.Run("outside untouched", func(t *testing.T) {
		got, _ := os.ReadFile(secret)
		entries, _ := os.ReadDir(outside)
		if string(got) != "secret needle\n" || len(entries) != 1 {
			t.Errorf("outside dir changed: %q, %d entries", got, len(entries))
		}
	})
}
