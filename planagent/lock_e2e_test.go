//go:build e2e

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
)

// Two `planagent resume` of one run: the second refuses (exit 2) naming
// the pid of the first, which drives the run alone.
func TestE2ETwoResumesOfOneRun(t *testing.T) {
	plan := `{"title":"Slow","overview":"x","tasks":[{"id":"slow","description":"TOKEN-SLOW","dependencies":[]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{{token: "TOKEN-SLOW", delay: time.Minute,
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "1"})}}}}
	e := newRunEnv(t, f)
	first := e.command("run", "--yes", "--runtime", "local", "be slow")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.started:
	case <-time.After(60 * time.Second):
		_ = first.Process.Kill()
		t.Fatal("the task never started")
	}
	_ = first.Process.Signal(syscall.SIGKILL) // a crash: its lock goes with it
	_ = first.Wait()

	a := e.command("resume")
	var aErr bytes.Buffer
	a.Stderr = &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	var locks []string
	holder := ""
	held := poll.Wait(t.Context(), 30*time.Second, func() bool {
		if locks, _ = filepath.Glob(filepath.Join(e.volumes, "runs", "*", "lock")); len(locks) == 1 {
			b, _ := os.ReadFile(locks[0])
			holder = strings.TrimSpace(string(b))
		}
		return holder == strconv.Itoa(a.Process.Pid)
	})
	if !held {
		t.Fatalf("the first resume (pid %d) never held the run lock %v (holder %q); stderr:\n%s", a.Process.Pid, locks, holder, aErr.String())
	}
	_, stderr, code := e.run("resume")
	if code != 2 || !strings.Contains(stderr, "pid "+strconv.Itoa(a.Process.Pid)) || !strings.Contains(stderr, "being driven by another planagent") {
		t.Fatalf("second resume: exit %d, want 2 naming pid %d:\n%s", code, a.Process.Pid, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 {
		t.Errorf("the refusal is not one line:\n%s", stderr)
	}
}

// status and resume without a run id name a corrupt state.json rather than
// skipping it (which said "no runs" or resumed an older run silently).
func TestE2ECorruptStateIsNamed(t *testing.T) {
	e := newRunEnv(t, &fakeModel{plan: oneTaskPlan, tasks: oneTask()})
	if _, stderr, code := e.run("run", "--yes", "--runtime", "local", "make the notes"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	corrupt := filepath.Join(e.volumes, "runs", "run-29991231-235959-ffff", "state.json")
	if err := os.MkdirAll(filepath.Dir(corrupt), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corrupt, []byte(`{"run_id":`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"status", "resume"} {
		_, stderr, code := e.run(cmd)
		if code != 2 || !strings.Contains(stderr, corrupt) || !strings.Contains(stderr, "corrupt") {
			t.Errorf("%s: exit %d, want 2 naming %s:\n%s", cmd, code, corrupt, stderr)
		}
	}
}
