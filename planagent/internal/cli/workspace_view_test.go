package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codeagent/codeagent/internal/filetree"
)

func TestWorkspaceViewShowsWhatTheToolsSee(t *testing.T) {
	root := t.TempDir()
	for rel, body := range map[string]string{
		".gitignore":           "dist/\n*.log\n",
		"go.mod":               "module x\n",
		"a.log":                "",
		"cmd/app/main.go":      "",
		"cmd/tool.go":          "",
		"dist/bundle.js":       "",
		"node_modules/m/i.js":  "",
		"volumes/runs/r/state": "",
		".git/HEAD":            "",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := workspaceView(t.Context(), filetree.New(root, filetree.Options{Exclude: []string{"volumes/"}}))
	const want = ".gitignore\ncmd/\n  app/\n  tool.go\ngo.mod\n"
	if got != want {
		t.Errorf("view =\n%s\nwant\n%s", got, want)
	}
	if got := workspaceView(t.Context(), filetree.New(t.TempDir(), filetree.Options{})); got != "(the workspace is empty)" {
		t.Errorf("empty workspace view = %q", got)
	}
}
