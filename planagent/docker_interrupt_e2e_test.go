//go:build e2e

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// TestE2EDockerInterrupted sends planagent the terminal's Ctrl-C (SIGINT)
// while a task runs in its container: planagent exits 130, the container is
// stopped and removed (after the watcher reported the task interrupted),
// and the run is left resumable.
func TestE2EDockerInterrupted(t *testing.T) {
	cli := dockerE2E(t)
	plan := `{"title":"Slow","overview":"One slow task.","tasks":[
 {"id":"slow","description":"TOKEN-SLOW: write slow.txt","dependencies":[]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{
		{token: "TOKEN-SLOW", delay: time.Minute, steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "slow\n"})}},
	}}
	e := newDockerRunEnv(t, f)
	label := layout.LabelVolumes + "=" + e.volumes
	watch := watchContainers(t, cli, label)

	cmd := e.command("run", "--runtime", "docker", "--yes", "make a slow file")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	fail := func(format string, args ...any) {
		t.Helper()
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf(format+"\nstderr:\n%s", append(args, errb.String())...)
	}

	select {
	case <-f.started:
	case err := <-exited:
		exited <- err
		fail("planagent exited (%v) before the task started", err)
	case <-deadline.C:
		fail("the task did not start within 60s")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		fail("SIGINT: %v", err)
	}
	select {
	case err := <-exited:
		ee := (*exec.ExitError)(nil)
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("planagent after SIGINT: %v, want exit 130\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	case <-deadline.C:
		fail("planagent did not exit within 60s of the start (SIGINT sent)")
	}

	if created := watch.settled(t); len(created) != 1 {
		t.Errorf("the run created %d containers, want 1", len(created))
	}
	assertNoContainers(t, cli, label)
	// The watcher had its SIGTERM grace inside the container's stop timeout.
	if rep := e.read("reports/slow.md"); !strings.Contains(rep, "status: interrupted") {
		t.Errorf("report of the running task:\n%s\nwant status: interrupted", rep)
	}
	runID, _ := e.runState()
	if st := e.read("runs/" + runID + "/state.json"); !strings.Contains(st, `"interrupted"`) {
		t.Errorf("state.json after Ctrl-C does not say interrupted:\n%s", st)
	}
}
