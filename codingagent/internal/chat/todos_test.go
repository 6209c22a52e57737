package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func TestTodosExecuteAll(t *testing.T) {
	plan := map[string]any{"title": "abc", "overview": "three steps", "testing_strategy": "go test", "tasks": []map[string]any{
		{"id": "a", "description": "do a", "dependencies": []string{}},
		{"id": "b", "description": "do b", "dependencies": []string{"a"}},
		{"id": "c", "description": "do c", "dependencies": []string{"b"}},
	}}
	tests := []struct {
		name   string
		failAt string // todo whose model call fails; "" = none
		want   map[string]TodoStatus
		order  []string
		output string
	}{
		{"all complete", "", map[string]TodoStatus{"a": TodoCompleted, "b": TodoCompleted, "c": TodoCompleted},
			[]string{"a", "b", "c"}, "all todos done"},
		{"stops at a failure", "b", map[string]TodoStatus{"a": TodoCompleted, "b": TodoFailed, "c": TodoPending},
			[]string{"a", "b"}, "execute-all stopped: todo b failed; 1 todos still pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.srv.Enqueue(llmtest.Calls(llmtest.Call("create_plan", plan)), llmtest.Text("Plan ready."))
			var mu sync.Mutex
			var ran []string
			e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
				u := lastUser(req)
				for _, id := range []string{"a", "b", "c"} {
					if strings.HasPrefix(u, "Carry out todo "+id+" ") {
						mu.Lock()
						ran = append(ran, id)
						mu.Unlock()
						if id == tt.failAt {
							return llmtest.Reply{Status: 400}
						}
						return llmtest.Text("finished " + id)
					}
				}
				return llmtest.Text("?")
			})
			export := filepath.Join(t.TempDir(), "todos.json")
			out := e.run("t", "/mode plan\nplan abc\n/plan show\n/plan to-todos\n/todos execute c\n/todos execute-all\n/todos list\n/todos export "+export+"\n", nil)
			e.noRejections()
			if strings.Join(ran, ",") != strings.Join(tt.order, ",") {
				t.Errorf("ran %v, want %v\n%s", ran, tt.order, out)
			}
			st := e.state("t")
			for id, want := range tt.want {
				if got := st.Todos[st.index(id)].Status; got != want {
					t.Errorf("todo %s = %s, want %s", id, got, want)
				}
			}
			for _, want := range []string{"Testing strategy: go test", "3 todos created",
				"todo c cannot run yet: it depends on b (pending)", "[1/3] a: do a", "[2/3] b: do b", tt.output} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			// b's request carries a's report: the batch read the current state.
			for _, req := range e.srv.Requests() {
				if strings.HasPrefix(lastUser(req), "Carry out todo b ") && !strings.Contains(lastUser(req), "- a: finished a") {
					t.Errorf("todo b was not given a's result:\n%s", lastUser(req))
				}
			}
			b, err := os.ReadFile(export)
			var exported State
			if err != nil || json.Unmarshal(b, &exported) != nil || len(exported.Todos) != 3 {
				t.Errorf("export = %s, %v", b, err)
			}
		})
	}
}

func TestTodosUpdateAndPersistAcrossSessions(t *testing.T) {
	e := newEnv(t)
	plan := map[string]any{"tasks": []map[string]any{
		{"id": "x", "description": "do x", "dependencies": []string{}},
		{"id": "y", "description": "do y", "dependencies": []string{"x"}},
	}}
	e.srv.Enqueue(llmtest.Calls(llmtest.Call("create_plan", plan)), llmtest.Text("ok"))
	e.run("u", "/mode plan\nplan\n/plan to-todos\n/todos update x completed\n/todos update x done\n", nil)
	out := e.run("u", "/todos list\n/plan clear\n/todos clear\n/todos list\n", nil)
	e.noRejections()
	for _, want := range []string{"[x] x  do x", "[ ] y  do y (after x)", "1 of 2 completed", "plan cleared", "no todos"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if st := e.state("u"); st.Plan != nil || len(st.Todos) != 0 {
		t.Errorf("state after clear = %+v", st)
	}
}

// TestTodosExecuteAllInterrupted: Ctrl-C while a todo runs stops the batch;
// the interrupted todo is pending again, the history stays valid, and the
// chat goes on with the next input.
func TestTodosExecuteAllInterrupted(t *testing.T) {
	e := newEnv(t)
	plan := map[string]any{"tasks": []map[string]any{
		{"id": "a", "description": "do a", "dependencies": []string{}},
		{"id": "b", "description": "do b", "dependencies": []string{"a"}},
		{"id": "c", "description": "do c", "dependencies": []string{"b"}},
	}}
	e.srv.Enqueue(llmtest.Calls(llmtest.Call("create_plan", plan)), llmtest.Text("Plan ready."))
	interrupts := make(chan os.Signal, 1)
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		u := lastUser(req)
		switch {
		case strings.HasPrefix(u, "Carry out todo b:"):
			interrupts <- os.Interrupt // Ctrl-C while the model works on b
			return llmtest.Reply{Content: "too late", Delay: time.Minute}
		case strings.HasPrefix(u, "Carry out todo "):
			return llmtest.Text("finished")
		}
		return llmtest.Text("still here")
	})
	out := e.run("ia", "/mode plan\nplan it\n/plan to-todos\n/todos execute-all\n/mode direct\nare you there?\n", func(o *Options) {
		o.Interrupt = interrupts
	})
	e.noRejections()
	st := e.state("ia")
	for id, want := range map[string]TodoStatus{"a": TodoCompleted, "b": TodoPending, "c": TodoPending} {
		if got := st.Todos[st.index(id)].Status; got != want {
			t.Errorf("todo %s = %s, want %s", id, got, want)
		}
	}
	for _, want := range []string{"[2/3] b", "execute-all interrupted: 2 of 3 todos pending", "still here"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[3/3]") {
		t.Errorf("execute-all went on after Ctrl-C:\n%s", out)
	}
}

// TestTodosExecuteModeOverride: without a terminal edits are refused, but
// `/todos execute ID --mode auto_edit` allows them for that todo only.
func TestTodosExecuteModeOverride(t *testing.T) {
	e := newEnv(t)
	plan := map[string]any{"tasks": []map[string]any{
		{"id": "w", "description": "write w.txt", "dependencies": []string{}},
	}}
	e.srv.Enqueue(llmtest.Calls(llmtest.Call("create_plan", plan)), llmtest.Text("Plan ready."))
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return llmtest.Text("done")
		}
		file := "w.txt"
		if !strings.HasPrefix(lastUser(req), "Carry out todo w:") {
			file = "direct.txt"
		}
		return llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": file, "content": "x"}))
	})
	out := e.run("mo", "/mode plan\nplan\n/plan to-todos\n/todos execute w --mode auto_edit\n/mode direct\nwrite directly\n", nil)
	e.noRejections()
	if _, ok := e.file("w.txt"); !ok {
		t.Errorf("--mode auto_edit did not allow the todo's edit:\n%s", out)
	}
	if _, ok := e.file("direct.txt"); ok {
		t.Errorf("the override outlived its todo: a later direct edit ran without approval:\n%s", out)
	}
	if !strings.Contains(out, "refused: write_file") {
		t.Errorf("the later edit was not refused:\n%s", out)
	}
}

// A plan without todos: execute-all says how to get todos; the plan mode a
// session was left in comes back with it.
func TestExecuteAllWithAPlanButNoTodosAndPlanModeKept(t *testing.T) {
	e := newEnv(t)
	plan := map[string]any{"tasks": []map[string]any{{"id": "x", "description": "do x", "dependencies": []string{}}}}
	e.srv.Enqueue(llmtest.Calls(llmtest.Call("create_plan", plan)), llmtest.Text("ok"))
	out := e.run("k", "/mode plan\nplan\n/todos execute-all\n", nil)
	e.noRejections()
	if !strings.Contains(out, "no todos yet: /plan to-todos turns the plan into todos") {
		t.Errorf("execute-all with a plan and no todos:\n%s", out)
	}
	if !e.state("k").PlanMode {
		t.Error("plan mode was not saved with the session")
	}
	if out := e.run("k", "/exit\n", nil); !strings.Contains(out, "plan mode (kept from the session)") || !strings.Contains(out, "[PLAN] > ") {
		t.Errorf("the session did not come back in plan mode:\n%s", out)
	}
}
