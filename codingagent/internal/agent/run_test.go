package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/tools"
)

func TestTaskReadsEditsAndRunsShell(t *testing.T) {
	e := newEnv(t)
	e.write("hello.txt", "hello world\n")
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "hello.txt"})),
		llmtest.Calls(llmtest.Call("edit_file", map[string]any{"path": "hello.txt", "old_string": "hello", "new_string": "goodbye"})),
		llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "cp hello.txt copy.txt && cat copy.txt"})),
		llmtest.Text("Changed the greeting and checked it with cat."),
	)
	a := e.agent(func(o *Options) { o.Stream = true })
	res, err := a.RunTask(t.Context(), Task{ID: "t1", Title: "Say goodbye", Description: "Replace hello by goodbye in hello.txt",
		Acceptance: []string{"hello.txt says goodbye"}})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || res.Answer != "Changed the greeting and checked it with cat." || res.Iterations != 4 {
		t.Fatalf("result = %+v", res)
	}
	if got := e.read("hello.txt"); got != "goodbye world\n" {
		t.Errorf("hello.txt = %q", got)
	}
	if got := e.read("copy.txt"); got != "goodbye world\n" {
		t.Errorf("copy.txt = %q (shell_exec did not run in the workspace)", got)
	}
	if !slices.Equal(res.FilesChanged, []string{"hello.txt"}) {
		t.Errorf("FilesChanged = %v", res.FilesChanged)
	}
	if res.Usage.Prompt == 0 || res.Usage.Completion == 0 {
		t.Errorf("usage not counted: %+v", res.Usage)
	}
	reqs := e.srv.Requests()
	first := reqs[0]
	if !strings.Contains(first.Messages[1].Content, "# Task t1: Say goodbye") ||
		!strings.Contains(first.Messages[1].Content, "- hello.txt says goodbye") {
		t.Errorf("first user message is not the task:\n%s", first.Messages[1].Content)
	}
	if !strings.Contains(system(first), "Workspace root: "+e.dir) {
		t.Errorf("system prompt lacks the workspace root")
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1]
	if last.Role != llm.RoleTool || !strings.Contains(last.Content, "goodbye world") {
		t.Errorf("the shell result is not the last message of the next request: %+v", last)
	}
	starts := e.events.ofType(events.ResponseStart)
	if len(starts) != 1 || starts[0].Mode != "direct" {
		t.Errorf("response_start events = %+v", starts)
	}
	if n := len(e.events.ofType(events.ToolCall)); n != 3 {
		t.Errorf("%d tool_call events, want 3", n)
	}
	if n := len(e.events.ofType(events.ToolResult)); n != 3 {
		t.Errorf("%d tool_result events, want 3", n)
	}
	var streamed strings.Builder
	for _, ev := range e.events.ofType(events.Token) {
		streamed.WriteString(ev.Text)
	}
	if streamed.String() != res.Answer {
		t.Errorf("streamed tokens = %q, want the answer", streamed.String())
	}
	ends := e.events.ofType(events.ResponseEnd)
	if len(ends) != 1 || ends[0].Usage == nil || ends[0].Usage.Prompt != res.Usage.Prompt || ends[0].Status != "completed" {
		t.Errorf("response_end events = %+v", ends)
	}
}

func TestSeveralToolCallsInOneResponse(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "alpha\n")
	e.write("b.txt", "beta\n")
	e.srv.Enqueue(
		llmtest.Calls(
			llmtest.Call("read_file", map[string]any{"path": "a.txt"}),
			llmtest.Call("read_file", map[string]any{"path": "missing.txt"}),
			llmtest.Call("write_file", map[string]any{"path": "c.txt", "content": "gamma\n"}),
			llmtest.Call("read_file", map[string]any{"path": "b.txt"}),
		),
		llmtest.Text("done"),
	)
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "multi", Title: "read and write"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || e.read("c.txt") != "gamma\n" {
		t.Fatalf("result %+v, c.txt %q", res, e.read("c.txt"))
	}
	req := e.srv.Requests()[1]
	calls := req.Messages[len(req.Messages)-5].ToolCalls
	answers := req.Messages[len(req.Messages)-4:]
	if len(calls) != 4 {
		t.Fatalf("assistant message has %d calls, want 4", len(calls))
	}
	wantIn := []string{"alpha", "ERROR: ", "wrote c.txt", "beta"}
	for i, m := range answers {
		if m.Role != llm.RoleTool || m.ToolCallID != calls[i].ID || !strings.Contains(m.Content, wantIn[i]) {
			t.Errorf("answer %d = %+v, want the answer to %s containing %q", i, m, calls[i].ID, wantIn[i])
		}
	}
}

func TestStopConditions(t *testing.T) {
	tests := []struct {
		name     string
		maxIter  int
		budget   int
		call     func(n int) llmtest.ToolCall
		wantErr  string
		wantReqs int
	}{
		{
			name:    "iteration limit",
			maxIter: 3,
			call: func(n int) llmtest.ToolCall {
				return llmtest.Call("list_dir", map[string]any{"path": fmt.Sprintf("dir%d", n)})
			},
			wantErr: "iteration limit", wantReqs: 3,
		},
		{
			name:    "same call three times",
			maxIter: 50,
			call: func(int) llmtest.ToolCall {
				return llmtest.Call("read_file", map[string]any{"path": "a.txt"})
			},
			wantErr: "the same tool call", wantReqs: 3,
		},
		{
			name:    "cycle of two calls",
			maxIter: 50,
			call: func(n int) llmtest.ToolCall {
				return llmtest.Call("read_file", map[string]any{"path": []string{"a.txt", "b.txt"}[n%2]})
			},
			wantErr: "a cycle of 2 tool calls", wantReqs: 6,
		},
		{
			// The first call's usage passes a 1-token budget: stopped before the second.
			name:    "token budget",
			maxIter: 50,
			budget:  1,
			call: func(n int) llmtest.ToolCall {
				return llmtest.Call("list_dir", map[string]any{"path": fmt.Sprintf("dir%d", n)})
			},
			wantErr: "budget: stopped after", wantReqs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("a.txt", "a\n")
			e.write("b.txt", "b\n")
			var n atomic.Int64
			e.srv.Handle(func(llmtest.Request) llmtest.Reply {
				return llmtest.Calls(tt.call(int(n.Add(1))))
			})
			res, err := e.agent(func(o *Options) { o.MaxIterations, o.BudgetTokens = tt.maxIter, tt.budget }).RunTask(t.Context(), Task{ID: "stuck"})
			if err != nil {
				t.Fatal(err)
			}
			e.noRejections()
			if res.Status != Failed || !strings.Contains(res.Error, tt.wantErr) {
				t.Fatalf("result = %+v, want failed with %q", res, tt.wantErr)
			}
			if (res.Reason == ReasonBudget) != (tt.budget > 0) {
				t.Errorf("reason %q", res.Reason)
			}
			if got := len(e.srv.Requests()); got != tt.wantReqs || res.Iterations != tt.wantReqs {
				t.Errorf("%d requests, %d iterations; want %d", got, res.Iterations, tt.wantReqs)
			}
		})
	}
}

func TestCancelMidToolCallLeavesAcceptedHistory(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "a\n")
	e.srv.Enqueue(llmtest.Calls(
		llmtest.Call("read_file", map[string]any{"path": "a.txt"}),
		llmtest.Call("shell_exec", map[string]any{"command": "echo go > " + fifo + "; sleep 30"}),
		llmtest.Call("read_file", map[string]any{"path": "a.txt"}),
	))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Opening the FIFO blocks until the shell writes to it: the tool is running.
		if b, err := os.ReadFile(fifo); err == nil && strings.TrimSpace(string(b)) == "go" {
			cancel()
		}
	}()
	session := filepath.Join(t.TempDir(), "s.jsonl")
	a := e.agent(func(o *Options) { o.SessionPath = session })
	start := time.Now()
	res, err := a.RunTask(ctx, Task{ID: "cancel-me"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Interrupted {
		t.Fatalf("result = %+v, want interrupted", res)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v: the shell command was not stopped", d)
	}
	msgs := a.Messages()
	tail := msgs[len(msgs)-3:]
	for i, m := range tail {
		if m.Role != llm.RoleTool {
			t.Fatalf("message %d after the calls is %s, want tool", i, m.Role)
		}
	}
	if !strings.Contains(tail[2].Content, "cancelled") {
		t.Errorf("the call after the cancelled one was answered %q", tail[2].Content)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A new agent on the same session continues; the strict server accepts the history.
	e.srv.Enqueue(llmtest.Text("resumed"))
	b := e.agent(func(o *Options) { o.SessionPath = session })
	res, err = b.Send(t.Context(), "go on")
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || res.Answer != "resumed" {
		t.Fatalf("after resume: %+v", res)
	}
}

func TestInfrastructureFailureIsReported(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(llmtest.Reply{Status: 503})
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "down"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Failed || !strings.Contains(res.Error, "503") || strings.Contains(res.Error, "test-key") {
		t.Fatalf("result = %+v, want failed naming HTTP 503 without the key", res)
	}
}

func TestToolInfrastructureFailureStopsTheRun(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a\n")
	boom := tools.NewFunc("boom", "Always breaks.", true, func(context.Context, struct{}) (tools.Result, error) {
		return tools.Result{}, errors.New("disk on fire")
	})
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("boom", map[string]any{}), llmtest.Call("read_file", map[string]any{"path": "a.txt"})),
		llmtest.Text("recovered"),
	)
	a := e.agent(func(o *Options) { o.Tools = o.Tools.With(boom) })
	res, err := a.RunTask(t.Context(), Task{ID: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Failed || !strings.Contains(res.Error, "tool boom failed: disk on fire") {
		t.Fatalf("result = %+v", res)
	}
	msgs := a.Messages()
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Content, "not run") {
		t.Errorf("the call after the failed one was run or left unanswered: %+v", last)
	}
	// The history stays one the server accepts.
	if res, _ := a.Send(t.Context(), "try again"); res.Answer != "recovered" {
		t.Errorf("next turn = %+v", res)
	}
	e.noRejections()
}
