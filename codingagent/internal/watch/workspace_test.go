package watch

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// copyModel writes <task>.txt with write_file, then records the shell's
// working directory with shell_exec, then answers.
func copyModel(req llmtest.Request) llmtest.Reply {
	if isMemoryRequest(req) {
		return llmtest.Text("- none")
	}
	id := taskOfRequest(req)
	tools := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			tools++
		}
	}
	switch tools {
	case 0:
		return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": id + ".txt", "content": id}))
	case 1:
		return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "pwd -P > where.txt"}))
	}
	return llmtest.Text("Done " + id + ".")
}

// attemptCopy makes the attempt's copy as planagent would (a plain
// directory here) and returns the command working in it.
func attemptCopy(t *testing.T, l volume.Layout, id string) (*protocol.Command, string) {
	t.Helper()
	c := command(id, 1)
	c.Workspace = l.AttemptRel(c.RunID, id, 1)
	dir := l.Attempt(c.RunID, id, 1)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return c, dir
}

// The shared watcher (the local runtime, the compose watcher) carries each
// command out in the workspace the command names: the files the agent
// writes and the shell's working directory are the attempt's copy, and the
// default workspace stays untouched.
func TestWatchRunsEachTaskInItsCopy(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	srv.Handle(copyModel)
	startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), Concurrency: 2, Reconcile: time.Second})
	dirs := map[string]string{}
	for _, id := range []string{"t1", "t2"} {
		c, dir := attemptCopy(t, l, id)
		dirs[id] = dir
		dropCommand(t, l, c)
	}
	for id, dir := range dirs {
		if rep := waitReport(t, l, id, 1); rep.Status != protocol.StatusCompleted {
			t.Fatalf("%s: %s (%s)", id, rep.Status, rep.Error)
		}
		if got, err := os.ReadFile(filepath.Join(dir, id+".txt")); err != nil || string(got) != id {
			t.Errorf("%s: the file is not in its copy: %q, %v", id, got, err)
		}
		real, _ := filepath.EvalSymlinks(dir)
		if got, _ := os.ReadFile(filepath.Join(dir, "where.txt")); strings.TrimSpace(string(got)) != real {
			t.Errorf("%s: the shell ran in %q, want the copy %s", id, got, real)
		}
		if exists(filepath.Join(l.Workspace(), id+".txt")) {
			t.Errorf("%s: the default workspace got the task's file", id)
		}
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Errorf("the model server rejected requests: %v", r)
	}
}

// A command whose workspace is missing or leaves the attempts dir through
// a symbolic link gets a failed report naming the problem; the model is
// never called and nothing is written outside.
func TestWatchRefusesWorkspaceOutsideTheVolumes(t *testing.T) {
	l := newLayout(t)
	outside := t.TempDir()
	run := filepath.Join(l.Attempts(), "r1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(run, "t1.1")); err != nil {
		t.Fatal(err)
	}
	// A link to the attempts dir's parent: a path under the volumes but
	// not under attempts/.
	if err := os.Symlink(l.Root, filepath.Join(run, "t3.1")); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t)
	var mu sync.Mutex
	calls := 0
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		mu.Lock()
		calls++
		mu.Unlock()
		return copyModel(req)
	})
	startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), Concurrency: 3})
	want := map[string]string{"t1": "outside the volumes' attempts dir", "t2": "no such file", "t3": "outside the volumes' attempts dir"}
	for id := range want {
		c := command(id, 1)
		c.Workspace = l.AttemptRel(c.RunID, id, 1)
		dropCommand(t, l, c)
	}
	for id, problem := range want {
		rep := waitReport(t, l, id, 1)
		if rep.Status != protocol.StatusFailed || !strings.Contains(rep.Error, problem) || !strings.Contains(rep.Error, "attempts/r1/"+id+".1") {
			t.Errorf("%s: %s %q, want failed naming the workspace and %q", id, rep.Status, rep.Error, problem)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("something was written outside the volumes: %v", entries)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls > 0 {
		t.Errorf("the model was called %d times for refused workspaces", calls)
	}
}

// `codingagent watch --task ID` (Options.Task) carries out that one command
// in its copy, returns once the report is written, and leaves the other
// commands to their own agents.
func TestWatchOnceRunsOneTask(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	srv.Handle(copyModel)
	c, dir := attemptCopy(t, l, "t1")
	dropCommand(t, l, c)
	other, _ := attemptCopy(t, l, "t2")
	dropCommand(t, l, other)
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), Options{Layout: l, Runner: agentRunner(t, l, srv), Task: "t1", Logger: testLogger(t)})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(testWait):
		t.Fatalf("Run with Task did not return within %s", testWait)
	}
	rep, err := protocol.ReadReport(l.ReportFile("t1"))
	if err != nil || rep.Status != protocol.StatusCompleted {
		t.Fatalf("report of t1: %+v, %v", rep, err)
	}
	if !exists(filepath.Join(dir, "t1.txt")) {
		t.Error("t1's file is not in its copy")
	}
	if !exists(l.CommandFile("t2")) || exists(l.ReportFile("t2")) {
		t.Error("the one-task watcher touched another task's command")
	}
	for _, p := range []string{filepath.Join(l.Claimed(), "t1.md"), filepath.Join(l.Claimed(), "t1.owner.json")} {
		if exists(p) {
			t.Errorf("claim file %s left behind", p)
		}
	}
	if entries, _ := os.ReadDir(l.Watchers()); len(entries) > 0 {
		t.Errorf("heartbeat left behind: %v", entries)
	}
}

// A one-task watcher whose command never comes fails, naming the task.
func TestWatchOnceWithoutCommand(t *testing.T) {
	t.Parallel() // own layout, server and watcher; most of it is waiting
	l := newLayout(t)
	srv := llmtest.New(t)
	err := Run(t.Context(), Options{Layout: l, Runner: agentRunner(t, l, srv), Task: "t9", StaleAfter: 200 * time.Millisecond, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "no command for task t9") {
		t.Fatalf("Run: %v, want an error naming the missing command", err)
	}
}

// Every attempt's copy maps into one repo map cache file (the attempts'
// key), not one per copy's path: a run of a thousand tasks would leave a
// thousand, each the size of the project's map. Each task's prompt still
// has its own copy's map.
func TestAttemptsShareOneRepoMapCache(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	var mu sync.Mutex
	prompts := map[string]string{}
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if id := taskOfRequest(req); id != "" && len(req.Messages) > 0 {
			mu.Lock()
			prompts[id] = req.Messages[0].Content
			mu.Unlock()
		}
		return copyModel(req)
	})
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model", MaxRetries: 1})
	r, err := NewAgentRunner(AgentConfig{Client: client, Layout: l, RepoMapTokens: 512,
		Agent: agent.Options{Model: "test-model", MaxIterations: 10}})
	if err != nil {
		t.Fatal(err)
	}
	startWatcher(t, Options{Layout: l, Runner: r, Concurrency: 1, Reconcile: time.Second})
	for _, id := range []string{"t1", "t2", "t3"} {
		c, dir := attemptCopy(t, l, id)
		src := "package p\n\n// Func" + id + " is " + id + "'s own.\nfunc Func" + id + "() {}\n"
		if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		dropCommand(t, l, c)
		if rep := waitReport(t, l, id, 1); rep.Status != protocol.StatusCompleted {
			t.Fatalf("%s: %s (%s)", id, rep.Status, rep.Error)
		}
	}
	entries, err := os.ReadDir(l.RepoMapCache())
	if err != nil || len(entries) != 1 {
		t.Errorf("repo map cache holds %d files (%v), want one for all the attempts", len(entries), err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"t1", "t2", "t3"} {
		if !strings.Contains(prompts[id], "Func"+id) {
			t.Errorf("%s's prompt lacks its copy's map:\n%s", id, prompts[id])
		}
	}
}
