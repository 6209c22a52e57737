package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/codingagent/internal/session"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func TestResumeFromSession(t *testing.T) {
	task := Task{ID: "R1", Title: "Resumable work"}
	readCall := llm.ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}
	write := func(t *testing.T, path string, recs ...session.Record) {
		l, err := session.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for _, r := range recs {
			if err := l.Append(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	msg := func(m llm.Message) session.Record { return session.Record{Kind: session.KindMessage, Message: &m} }
	taskStart := []session.Record{{Kind: session.KindTask, TaskID: task.ID}, msg(userMessage(formatTask(task)))}

	tests := []struct {
		name       string
		prepare    func(t *testing.T, e *env, path string)
		wantAnswer string
		wantReqs   int
		check      func(t *testing.T, req llmtest.Request)
	}{
		{
			name: "killed mid-write leaves a truncated last line",
			prepare: func(t *testing.T, e *env, path string) {
				e.srv.Enqueue(llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "a.txt"})), llmtest.Reply{Status: 500})
				res, err := e.agent(func(o *Options) { o.SessionPath = path }).RunTask(t.Context(), task)
				if err != nil || res.Status != Failed {
					t.Fatalf("first run = %+v, %v; want failed", res, err)
				}
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = f.WriteString(`{"kind":"message","message":{"role":"assistant","content":"half`)
				_ = f.Close()
			},
			wantAnswer: "done", wantReqs: 1,
			check: func(t *testing.T, req llmtest.Request) {
				if n := strings.Count(allText(req), "# Task R1"); n != 1 {
					t.Errorf("the task appears %d times, want once", n)
				}
				last := req.Messages[len(req.Messages)-1]
				if last.Role != llm.RoleTool || !strings.Contains(last.Content, "alpha") {
					t.Errorf("the resumed request does not end with the earlier read: %+v", last)
				}
				if strings.Contains(allText(req), "half") {
					t.Errorf("the torn record was replayed")
				}
			},
		},
		{
			name: "crash between a tool call and its answer",
			prepare: func(t *testing.T, e *env, path string) {
				write(t, path, append(taskStart, msg(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{readCall}}))...)
			},
			wantAnswer: "done", wantReqs: 1,
			check: func(t *testing.T, req llmtest.Request) {
				last := req.Messages[len(req.Messages)-1]
				if last.ToolCallID != "call_1" || !strings.Contains(last.Content, "not run") {
					t.Errorf("the unanswered call was not answered: %+v", last)
				}
			},
		},
		{
			name: "finished before the crash",
			prepare: func(t *testing.T, e *env, path string) {
				write(t, path, append(taskStart, msg(llm.Message{Role: llm.RoleAssistant, Content: "all done earlier"}))...)
			},
			wantAnswer: "all done earlier", wantReqs: 0,
		},
		{
			name: "session of another task continues the conversation",
			prepare: func(t *testing.T, e *env, path string) {
				write(t, path, session.Record{Kind: session.KindTask, TaskID: "R0"}, msg(userMessage("# Task R0: earlier")),
					msg(llm.Message{Role: llm.RoleAssistant, Content: "earlier answer"}))
			},
			wantAnswer: "done", wantReqs: 1,
			check: func(t *testing.T, req llmtest.Request) {
				text := allText(req)
				if !strings.Contains(text, "earlier answer") || !strings.Contains(text, "# Task R1") {
					t.Errorf("request lacks the earlier conversation or the new task")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("a.txt", "alpha\n")
			path := filepath.Join(t.TempDir(), "sessions", "R1.jsonl")
			tt.prepare(t, e, path)
			before := len(e.srv.Requests())
			e.srv.Enqueue(llmtest.Text("done"))
			res, err := e.agent(func(o *Options) { o.SessionPath = path }).RunTask(t.Context(), task)
			if err != nil {
				t.Fatal(err)
			}
			e.noRejections()
			if res.Status != Completed || res.Answer != tt.wantAnswer {
				t.Fatalf("resumed result = %+v", res)
			}
			reqs := e.srv.Requests()[before:]
			if len(reqs) != tt.wantReqs {
				t.Fatalf("%d requests after resuming, want %d", len(reqs), tt.wantReqs)
			}
			if tt.check != nil {
				tt.check(t, reqs[0])
			}
		})
	}
}

func TestCorruptSessionIsAnError(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte("garbage\n{\"kind\":\"task\",\"task_id\":\"x\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Client: e.client, Workspace: e.ws, Model: "m", SessionPath: path})
	if err == nil || !strings.Contains(err.Error(), "line 1 is corrupt") || !strings.Contains(err.Error(), path) {
		t.Fatalf("New = %v, want an error naming the file and line", err)
	}
}
