package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// A filter driver the user's config marks required whose program cannot
// run (git-lfs missing, say) refuses the run before planning: exit 2,
// one line naming the filter and the fix, no request to the model,
// nothing committed.
func TestRunRefusesARequiredFilterThatCannotRun(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	script := "git init -q -b main && git config filter.crypt.clean 'no-such-filter-program --clean' && " +
		"git config filter.crypt.smudge cat && git config filter.crypt.required true && " +
		"echo 'secret.txt filter=crypt' > .gitattributes && git add .gitattributes && " +
		"git -c user.name=U -c user.email=u@example.com commit -q -m start"
	c := exec.Command("sh", "-c", script)
	c.Dir = ws
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	head := gitOut(t, filepath.Join(ws, ".git"), "rev-parse", "HEAD")
	srv := llmtest.New(t)
	srv.Enqueue(
		llmtest.Calls(llmtest.Call("create_plan", `{"title":"S","tasks":[{"id":"s","title":"Write secret.txt","description":"x","dependencies":[]}]}`)),
		llmtest.Text("Planned."),
	)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codingagent"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_RUNTIME": "local", "CODEAGENT_VOLUMES_DIR": filepath.Join(t.TempDir(), "volumes"), "CODEAGENT_REPO_MAP_TOKENS": "0"})
	f.Executable = filepath.Join(bin, "planagent")
	code := cmdutil.Main(f, NewCmdRoot(f), []string{"run", "write the secret", "--yes", "--workspace", ws})
	if code != cmdutil.ExitUsage {
		t.Errorf("exit %d, want %d\n%s", code, cmdutil.ExitUsage, errb)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests to the model, want none", n)
	}
	if n := strings.Count(errb.String(), "planagent: "); n != 1 {
		t.Errorf("%d error lines, want one:\n%s", n, errb)
	}
	for _, want := range []string{`filter "crypt" is required`, "no-such-filter-program", "filter.crypt.required"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	if now := gitOut(t, filepath.Join(ws, ".git"), "rev-parse", "HEAD"); now != head {
		t.Errorf("HEAD moved to %s", now)
	}
}
