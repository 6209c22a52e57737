package watch

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
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

// testWait bounds every wait for a state; generous because the race
// detector and two shared cores slow everything down.
const testWait = 20 * time.Second

func newLayout(t testing.TB) volume.Layout {
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

func command(id string, attempt int) *protocol.Command {
	return &protocol.Command{ID: id, RunID: "r1", Attempt: attempt, Title: "write " + id + ".txt",
		Body: "Create the file " + id + ".txt.", Hints: []string{"use write_file"}}
}

func dropCommand(t testing.TB, l volume.Layout, c *protocol.Command) {
	t.Helper()
	if err := protocol.WriteCommand(l.CommandFile(c.ID), c); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every few milliseconds until it holds or the
// deadline passes; it is the deadline helper, not a sleep.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", testWait, what)
		}
		<-tick.C
	}
}

// waitReport waits for reports/<id>.md of the given attempt and returns it.
func waitReport(t testing.TB, l volume.Layout, id string, attempt int) *protocol.Report {
	t.Helper()
	var rep *protocol.Report
	eventually(t, "report "+id, func() bool {
		r, err := protocol.ReadReport(l.ReportFile(id))
		if err != nil || r.Attempt != attempt {
			return false
		}
		rep = r
		return true
	})
	return rep
}

// watcherRun is a Run in the background.
type watcherRun struct {
	cancel context.CancelFunc
	done   chan error
}

func startWatcher(t *testing.T, opts Options) *watcherRun {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithCancel(t.Context())
	w := &watcherRun{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(testWait):
			t.Errorf("watcher did not stop within %s", testWait)
		}
	})
	return w
}

// stop cancels the watcher and returns Run's result and how long it took.
func (w *watcherRun) stop(t *testing.T) (error, time.Duration) { //nolint:staticcheck // ST1008: reads as "err, took := w.stop(t)" at every call
	t.Helper()
	start := time.Now()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		return err, time.Since(start)
	case <-time.After(testWait):
		t.Fatalf("watcher did not stop within %s", testWait)
		return nil, 0
	}
}

type testWriter struct {
	mu sync.Mutex
	t  testing.TB
	on bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t, on: true}
	t.Cleanup(func() { w.mu.Lock(); w.on = false; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// agentRunner is the real runner over a real llm client talking to srv.
func agentRunner(t testing.TB, l volume.Layout, srv *llmtest.Server) *AgentRunner {
	t.Helper()
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model",
		MaxRetries: 1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	r, err := NewAgentRunner(AgentConfig{Client: client, Layout: l, Agent: agent.Options{Model: "test-model", MaxIterations: 10}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// taskOfRequest finds the task a request works on from the "# Task <id>:"
// heading of its first user message; "" for requests of no task.
func taskOfRequest(req llmtest.Request) string {
	for _, m := range req.Messages {
		if m.Role != llm.RoleUser {
			continue
		}
		rest, ok := strings.CutPrefix(m.Content, "# Task ")
		if !ok {
			return ""
		}
		id, _, _ := strings.Cut(rest, ":")
		return id
	}
	return ""
}

func isMemoryRequest(req llmtest.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem &&
		strings.HasPrefix(req.Messages[0].Content, "You maintain the long-term memory")
}

// scriptedModel answers every task the same way: write <id>.txt, then say
// done. It counts the tasks started (first request of a task), which is how
// the tests see that a command ran exactly once.
type scriptedModel struct {
	mu      sync.Mutex
	started map[string]int
	delay   time.Duration       // before every task's first answer
	onStart func(taskID string) // called on a task's first request
}

func newScriptedModel() *scriptedModel { return &scriptedModel{started: make(map[string]int)} }

func (m *scriptedModel) handle(req llmtest.Request) llmtest.Reply {
	if isMemoryRequest(req) {
		return llmtest.Text("- none")
	}
	id := taskOfRequest(req)
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		return llmtest.Text("Wrote " + id + ".txt.\n\nNothing else to do.")
	}
	m.mu.Lock()
	m.started[id]++
	onStart := m.onStart
	m.mu.Unlock()
	if onStart != nil {
		onStart(id)
	}
	r := llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": id + ".txt", "content": "hello from " + id + "\n"}))
	r.Delay = m.delay
	return r
}

func (m *scriptedModel) starts(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started[id]
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
