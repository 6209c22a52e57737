//go:build e2e

package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
)

// Ctrl-C is answered at once with "stopping…"; the summary follows once
// the running task has been interrupted.
func TestE2ECtrlCSaysStoppingAtOnce(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("long end-to-end test (the watcher's 10 s grace): set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	plan := `{"title":"Slow","overview":"x","tasks":[{"id":"slow","description":"TOKEN-SLOW","dependencies":[]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 4), tasks: []scriptTask{{token: "TOKEN-SLOW", delay: time.Minute,
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "1"})}}}}
	e := newRunEnv(t, f)
	cmd := e.command("run", "--yes", "--runtime", "local", "be slow")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case <-f.started:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the task never started")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	var seen []string
	stopping := time.Duration(0)
	for l := range lines {
		seen = append(seen, l)
		if stopping == 0 && strings.HasPrefix(l, "stopping…") {
			stopping = time.Since(sent)
		}
	}
	err = cmd.Wait()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, strings.Join(seen, "\n"))
	}
	if stopping == 0 || stopping > time.Second {
		t.Fatalf("\"stopping…\" after %v (want within 1s of Ctrl-C):\n%s", stopping, strings.Join(seen, "\n"))
	}
	t.Logf("stopping… %v after Ctrl-C; exit after %v", stopping.Round(time.Millisecond), time.Since(sent).Round(time.Millisecond))
}

// The first Ctrl-C names the second; the second stops the run without the
// watcher's grace (10 s), and the summary shows the running task as
// interrupted, its totals counting it so.
func TestE2ESecondCtrlCStopsNow(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("end-to-end test with the local watcher: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	plan := `{"title":"Slow","overview":"x","tasks":[{"id":"slow","description":"TOKEN-SLOW","dependencies":[]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 4), tasks: []scriptTask{{token: "TOKEN-SLOW", delay: time.Minute,
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "1"})}}}}
	e := newRunEnv(t, f)
	cmd := e.command("run", "--yes", "--runtime", "local", "be slow")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case <-f.started:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the task never started")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for l := range lines {
		seen = append(seen, l)
		if strings.HasPrefix(l, "stopping…") {
			break
		}
	}
	if last := seen[len(seen)-1]; !strings.Contains(last, "Ctrl-C again to stop now") {
		t.Fatalf("the first Ctrl-C's line does not name the second:\n%s", strings.Join(seen, "\n"))
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	second := time.Now()
	for l := range lines {
		seen = append(seen, l)
	}
	err = cmd.Wait()
	took := time.Since(second)
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, strings.Join(seen, "\n"))
	}
	// The watcher's grace is 10 s: the second Ctrl-C must not wait it out.
	if took > 7*time.Second {
		t.Errorf("exit %v after the second Ctrl-C (the grace is 10 s):\n%s", took, strings.Join(seen, "\n"))
	}
	if !strings.Contains(strings.Join(seen, "\n"), "stopping now") {
		t.Errorf("the second Ctrl-C was not answered:\n%s", strings.Join(seen, "\n"))
	}
	out := stdout.String()
	if !strings.Contains(out, "| slow | interrupted |") || !strings.Contains(out, "0 pending, 1 interrupted") || strings.Contains(out, "in_progress") {
		t.Errorf("the summary of the interrupted run:\n%s", out)
	}
	t.Logf("exit %v after the second Ctrl-C", took.Round(time.Millisecond))
}

// After Ctrl-C (exit 130, summary "interrupted"), status, status --json and
// graph show the task that was running as interrupted, not running; resume
// still starts it again and completes the run.
func TestE2EStatusAfterCtrlCShowsTheTaskInterrupted(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("end-to-end test with the local watcher: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	plan := `{"title":"Slow","overview":"x","tasks":[{"id":"slow","description":"TOKEN-SLOW","dependencies":[]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 4), tasks: []scriptTask{{token: "TOKEN-SLOW", delay: time.Minute,
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "1"})}}}}
	e := newRunEnv(t, f)
	cmd := e.command("run", "--yes", "--runtime", "local", "be slow")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case <-f.started:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the task never started")
	}
	// One Ctrl-C: the watcher's grace lets the agent report the task
	// interrupted. (After a second one, resume fails the task today: the
	// killed watcher's claim is retaken for a copy that is not there.)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130", err)
	}
	show := func(args ...string) string {
		t.Helper()
		out, errOut, code := e.run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		return out
	}
	if out := show("status"); !strings.Contains(out, "(interrupted)") || !strings.Contains(out, "[~] slow:") || strings.Contains(out, "[>]") {
		t.Errorf("status:\n%s", out)
	}
	if out := show("status", "--json"); !strings.Contains(out, `"status": "interrupted"`) || strings.Contains(out, `"in_progress": 1`) ||
		strings.Contains(out, `"status": "running"`) {
		t.Errorf("status --json:\n%s", out)
	}
	if out := show("graph"); strings.Contains(out, "in progress") || !strings.Contains(out, "interrupted") {
		t.Errorf("graph:\n%s", out)
	}
	// The web view (planagent ui, in a real browser): nothing running, the
	// task interrupted, and its time a fixed figure, not a running clock.
	addr := freeAddr(t)
	ui := e.command("ui", "--addr", addr)
	var uiErr strings.Builder
	ui.Stderr = &uiErr
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	listening := poll.Wait(t.Context(), 30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !listening {
		_ = ui.Process.Kill()
		t.Fatalf("planagent ui does not listen on %s:\n%s", addr, uiErr.String())
	}
	dom := startBrowser(t, chromium(t), "http://"+addr+"/").waitFor(
		`document.querySelector('#graph [data-task="slow"][data-status="interrupted"]') && document.querySelector('#tasks tr[data-task="slow"] td.time')`)
	_ = ui.Process.Signal(os.Interrupt)
	_ = ui.Wait()
	if !strings.Contains(dom, "0 running, 1 interrupted") || strings.Contains(dom, `class="time">running`) ||
		strings.Contains(dom, `data-status="in_progress"`) {
		t.Errorf("the web view of the interrupted run:\n%s", dom)
	}

	// What resume does is unchanged: it starts the task again.
	f.setScript(plan, []scriptTask{{token: "TOKEN-SLOW", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "1"})}}})
	if out, errOut, code := e.run("resume", "--runtime", "local"); code != 0 || !strings.Contains(out, "| slow | completed |") {
		t.Errorf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
