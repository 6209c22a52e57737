package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// heartbeatWatcher stands in for `codingagent watch --volumes DIR ...`: it
// writes a heartbeat like the real one and removes it on SIGTERM.
const heartbeatWatcher = `#!/bin/sh
dir="$3/reports/.watchers"
hb="$dir/sh-$$.json"
trap 'rm -f "$hb"; exit 0' TERM
while :; do printf '{"id":"sh-%s","updated":"%s"}\n' $$ "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$dir/.t-$$" && mv "$dir/.t-$$" "$hb"; sleep 0.05; done
`

func localLayout(t *testing.T) volume.Layout {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	return l
}

// A watcher stopped just before a restart must not have its exit reported
// as the death of the new one (each process has its own stop flag).
func TestLocalRestartDoesNotReportTheOldExit(t *testing.T) {
	t.Parallel()
	l := localLayout(t)
	bin := filepath.Join(t.TempDir(), "codingagent")
	if err := os.WriteFile(bin, []byte(heartbeatWatcher), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := NewLocal(LocalOptions{Volumes: l, Binary: bin, StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	for i := range 10 {
		if err := rt.Start(t.Context()); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if err := rt.Stop(t.Context()); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case ex := <-rt.Exited():
		t.Fatalf("a stopped watcher's exit was reported against the running one: %v", ex.Err)
	case <-time.After(300 * time.Millisecond):
	}
	// The running one's own death is still reported.
	rt.mu.Lock()
	pid := rt.proc.cmd.Process.Pid
	rt.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case ex := <-rt.Exited():
		if ex.TaskID != "" || ex.Err == nil || !strings.Contains(ex.Err.Error(), "exited") {
			t.Errorf("Exit = %+v, want the shared watcher's death", ex)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running watcher's death was not reported")
	}
}

// A watcher exits by itself only when something is wrong, even with
// status 0: Start says how it exited, not "<nil>".
func TestLocalWatcherExitingWithZeroSaysSo(t *testing.T) {
	l := localLayout(t)
	bin := filepath.Join(t.TempDir(), "codingagent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := NewLocal(LocalOptions{Volumes: l, Binary: bin, StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	err = rt.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "before its first heartbeat: exit status 0 ") {
		t.Errorf("Start = %v, want the watcher's exit before its first heartbeat with status 0", err)
	}
}

// TestE2ELocalRunsTaskInItsCopy: the local runtime's one watcher process
// (the real codingagent) carries each command out in the copy it names.
func TestE2ELocalRunsTaskInItsCopy(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("builds codingagent: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	srv := llmtest.New(t, llmtest.WithKey(testKey))
	srv.Handle(shellModel("echo local > made.txt && pwd -P"))
	l := localLayout(t)
	rt, err := NewLocal(LocalOptions{Volumes: l, Binary: staticCodingAgent(t), APIKey: testKey,
		Env: []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_MODEL=test-model"}, Log: testWriter{t}, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	a := newAttempt(t, l, "r1", "t1")
	if err := rt.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	rep := waitReport(t, l, "t1")
	real, _ := filepath.EvalSymlinks(a.Dir)
	if rep.Status != protocol.StatusCompleted || !strings.Contains(rep.Body, real) {
		t.Fatalf("report: %s %q, want completed with the shell in %s", rep.Status, rep.Body, real)
	}
	if got, err := os.ReadFile(filepath.Join(a.Dir, "made.txt")); err != nil || string(got) != "local\n" {
		t.Errorf("made.txt in the copy: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(l.Workspace(), "made.txt")); err == nil {
		t.Error("the task wrote into the default workspace")
	}
}
