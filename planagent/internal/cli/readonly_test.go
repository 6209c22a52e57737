package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// readOnly makes dir unwritable for this process until the test ends: a
// read-only bind mount for root (whom permissions do not stop; skipped
// where mounting is not allowed), its mode 0555 for anyone else.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		return
	}
	bindReadOnly(t, dir)
	if err := os.WriteFile(filepath.Join(dir, ".probe"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Fatalf("a write into the read-only %s: %v", dir, err)
	}
}

// A workspace, or the .git its checkpoints commit to, that planagent cannot
// write is refused before planning: exit 2, one line naming the directory
// and what to do, and no request to the model.
func TestRunRefusesAReadOnlyWorkspaceBeforePlanning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		git  bool
		ro   string // relative to the workspace
		want string
	}{
		{"a plain workspace", false, ".", "the workspace %s is not writable"},
		{"a git workspace", true, ".", "the workspace %s is not writable"},
		{"a git workspace's .git", true, ".git", "the git directory %s is not writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.git {
				for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
					{"-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "start"}} {
					if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v\n%s", args, err, out)
					}
				}
			}
			ro := filepath.Join(ws, tc.ro)
			readOnly(t, ro)
			srv := llmtest.New(t)
			srv.Enqueue(
				llmtest.Calls(llmtest.Call("create_plan", `{"title":"Greeter","tasks":[{"id":"lib","title":"Write greet.go","description":"add Greet","dependencies":[]}]}`)),
				llmtest.Text("Planned."),
			)
			bin := t.TempDir()
			if err := os.WriteFile(filepath.Join(bin, "codingagent"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
				"CODEAGENT_RUNTIME": "local", "CODEAGENT_VOLUMES_DIR": filepath.Join(t.TempDir(), "volumes"), "CODEAGENT_REPO_MAP_TOKENS": "0"})
			f.Executable = filepath.Join(bin, "planagent")
			code := cmdutil.Main(f, NewCmdRoot(f), []string{"run", "greet people", "--yes", "--workspace", ws})
			if code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want %d", code, cmdutil.ExitUsage)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests to the model, want none", n)
			}
			want := strings.Replace(tc.want, "%s", ro, 1)
			if n := strings.Count(errb.String(), "planagent: "); n != 1 {
				t.Errorf("%d error lines, want one:\n%s", n, errb)
			}
			if !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "chmod") {
				t.Errorf("stderr lacks %q and the fix:\n%s", want, errb)
			}
		})
	}
}

// A run whose workspace became read-only is refused by resume the same way,
// before any model call, and its state is left for a resume once it is
// writable again.
func TestResumeRefusesAReadOnlyWorkspace(t *testing.T) {
	t.Parallel()
	vol, ws, _, st := checkpointedRun(t, false)
	st.Tasks[1].Status, st.Tasks[1].Attempts = taskgraph.Pending, 0
	st.Status = runrecord.RunInterrupted
	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
	readOnly(t, ws)
	srv := llmtest.New(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codingagent"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_RUNTIME": "local", "CODEAGENT_REPO_MAP_TOKENS": "0"})
	f.Executable = filepath.Join(bin, "planagent")
	code := cmdutil.Main(f, NewCmdRoot(f), []string{"resume", st.RunID, "--volumes", vol, "--workspace", ws})
	if code != cmdutil.ExitUsage || len(srv.Requests()) != 0 {
		t.Errorf("exit %d with %d model requests, want %d and none:\n%s", code, len(srv.Requests()), cmdutil.ExitUsage, errb)
	}
	if want := "the workspace " + ws + " is not writable"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errb)
	}
	back, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.Status != runrecord.RunInterrupted || back.Tasks[1].Status != taskgraph.Pending {
		t.Errorf("the refused resume changed the run: %s, task b %s", back.Status, back.Tasks[1].Status)
	}
}
