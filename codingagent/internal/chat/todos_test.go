package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	openai "github.com/sashabaranov/go-openai"
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
			e.srv.Handle(func(req openai.ChatCompletionRequest) llmtest.Reply {
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
