package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// On a terminal, run shows the plan and asks before running it; "n" leaves
// nothing behind (no run state, no command) and exits 0.
func TestRunAsksOnATerminal(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := llmtest.New(t)
	srv.Enqueue(
		llmtest.Calls(llmtest.Call("create_plan", `{"title":"Greeter","tasks":[{"id":"lib","title":"Write greet.go","description":"add Greet","dependencies":[]}]}`)),
		llmtest.Text("Planned."),
	)
	// The local runtime is checked before planning; a placeholder binary
	// next to the executable is enough, since declining never starts it.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codingagent"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	volumes := filepath.Join(t.TempDir(), "volumes")
	f, out, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_RUNTIME": "local", "CODEAGENT_VOLUMES_DIR": volumes, "CODEAGENT_REPO_MAP_TOKENS": "0"})
	f.Executable = filepath.Join(bin, "planagent")
	f.IO.IsTerminal = func() bool { return true }
	f.IO.In = strings.NewReader("n\n")

	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"run", "greet people", "--budget-tokens", "20000", "--budget-time", "10m"}); code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errb)
	}
	for _, want := range []string{"Plan: Greeter", "1. lib: Write greet.go", "Proceed? [Y/n]", "Not run.",
		"Budgets: 20000 tokens, 10m0s of running time (reached: no new task starts, the run pauses; exit 3)"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out)
	}
	if entries, _ := os.ReadDir(filepath.Join(volumes, "runs")); len(entries) > 0 {
		t.Errorf("runs/ after declining: %v", entries)
	}
	if m, _ := filepath.Glob(filepath.Join(volumes, "commands", "*.md")); len(m) > 0 {
		t.Errorf("commands after declining: %v", m)
	}
}

// A plan awaiting confirmation is told to the notify sinks.
func TestRunNotifiesThePlanAwaitingConfirmation(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	srv := llmtest.New(t)
	srv.Enqueue(
		llmtest.Calls(llmtest.Call("create_plan", `{"title":"Greeter","tasks":[{"id":"lib","title":"Write greet.go","description":"add Greet","dependencies":[]}]}`)),
		llmtest.Text("Planned."),
	)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codingagent"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(dir, "notified.json")
	if err := os.WriteFile(filepath.Join(dir, "codeagent.yaml"), []byte("notify:\n  command: \"cat > "+got+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_RUNTIME": "local", "CODEAGENT_VOLUMES_DIR": filepath.Join(dir, "volumes"), "CODEAGENT_REPO_MAP_TOKENS": "0"})
	f.Executable = filepath.Join(bin, "planagent")
	f.IO.IsTerminal = func() bool { return true }
	f.IO.In = strings.NewReader("n\n")
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"run", "greet people"}); code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errb)
	}
	b, err := os.ReadFile(got)
	if err != nil || !strings.Contains(string(b), `"event":"plan_awaiting"`) || !strings.Contains(string(b), `(1 tasks) awaits your confirmation`) {
		t.Errorf("the command sink got %q (%v)", b, err)
	}
}
