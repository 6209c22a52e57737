package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
)

// One included ignored file is "1 ignored file … is copied", not "1
// ignored files … are".
func TestIncludeIgnoredCountsInEnglish(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	files := map[string]string{".gitignore": ".env\n*.gen.go\n", checkpoint.IncludeFile: ".env\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("sh", "-c", "git init -q -b main && git add -A && git -c user.name=U -c user.email=u@example.com commit -q -m init")
	git.Dir = ws
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{".env"}, "checkpoints: 1 ignored file ("},
		{[]string{".env", "api.gen.go"}, "checkpoints: 2 ignored files ("},
	} {
		for _, name := range c.files {
			if err := os.WriteFile(filepath.Join(ws, name), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		repo, err := checkpoint.Open(t.Context(), ws, filepath.Join(t.TempDir(), "shadow.git"), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := &session{}
		s.cfg.IncludeIgnored = []string{"*.gen.go"}
		var w bytes.Buffer
		if err := s.includeIgnored(t.Context(), repo, &w); err != nil {
			t.Fatal(err)
		}
		_ = repo.Close()
		verb := " are copied"
		if len(c.files) == 1 {
			verb = " is copied"
		}
		if !strings.HasPrefix(w.String(), c.want) || !strings.Contains(w.String(), verb) {
			t.Errorf("%d files: %q, want %q…%q", len(c.files), w.String(), c.want, verb)
		}
	}
}
