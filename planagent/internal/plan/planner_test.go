package plan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/tools"
)

var (
	validPlan = map[string]any{"title": "greeter", "overview": "add a greeter", "tasks": []map[string]any{
		{"id": "lib", "description": "add Greet() to greet.go", "dependencies": []string{}, "acceptance": []string{"go build ./..."}},
		{"id": "cli", "description": "call Greet from main.go", "dependencies": []string{"lib"}},
	}}
	cyclicPlan = map[string]any{"tasks": []map[string]any{
		{"id": "a", "description": "x", "dependencies": []string{"b"}},
		{"id": "b", "description": "y", "dependencies": []string{"a"}},
	}}
	unknownDepPlan = map[string]any{"tasks": []map[string]any{
		{"id": "a", "description": "x", "dependencies": []string{}},
		{"id": "b", "description": "y", "dependencies": []string{"z"}},
	}}
)

// recorder is an events.Sink that keeps what it gets.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recorder) Emit(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) ofType(typ events.Type) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Event
	for _, e := range r.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

type fixture struct {
	srv  *llmtest.Server
	ws   string
	rec  *recorder
	plan *Planner
}

// newFixture wires a real llmclient.Client to a strict test server and gives the
// planner the full coding tool set, so every test also checks that the
// planner narrows it to the read-only tools.
func newFixture(t *testing.T, opts Options, replies ...llmtest.Reply) *fixture {
	t.Helper()
	srv := llmtest.New(t)
	srv.Enqueue(replies...)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model"})
	rec := &recorder{}
	opts.Events = rec
	return &fixture{srv: srv, ws: dir, rec: rec, plan: NewPlanner(client, tools.Coding(ws, tools.Options{}), opts)}
}

// lastMessage is the last message of request n (0-based).
func (f *fixture) lastMessage(t *testing.T, n int) llmtest.Message {
	t.Helper()
	reqs := f.srv.Requests()
	if len(reqs) <= n {
		t.Fatalf("server got %d requests, want more than %d", len(reqs), n)
	}
	msgs := reqs[n].Messages
	return msgs[len(msgs)-1]
}

func TestPlanner(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		replies  []llmtest.Reply
		wantErr  error  // nil: a plan is expected
		errText  string // substring of the error
		requests int
		check    func(t *testing.T, f *fixture, p *Plan)
	}{
		{
			name:     "valid plan at once",
			replies:  []llmtest.Reply{llmtest.Calls(llmtest.Call("create_plan", validPlan))},
			requests: 1,
			check: func(t *testing.T, f *fixture, p *Plan) {
				if p.Title != "greeter" || len(p.Tasks) != 2 || p.Tasks[1].Dependencies[0] != "lib" {
					t.Errorf("plan = %+v", p)
				}
				created := f.rec.ofType(events.PlanCreated)
				if len(created) != 1 || created[0].Data["tasks"] != 2 {
					t.Errorf("plan_created events = %+v", created)
				}
			},
		},
		{
			name: "cyclic plan is repaired",
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("create_plan", cyclicPlan)),
				llmtest.Calls(llmtest.Call("create_plan", validPlan)),
			},
			requests: 2,
			check: func(t *testing.T, f *fixture, p *Plan) {
				m := f.lastMessage(t, 1)
				want := "plan rejected: dependency cycle: a -> b -> a: remove one of these dependencies. Call create_plan again with a fixed plan."
				if m.Role != llm.RoleTool || m.Content != want {
					t.Errorf("second request ends with %s %q, want the tool result %q", m.Role, m.Content, want)
				}
				if len(p.Tasks) != 2 {
					t.Errorf("plan = %+v", p)
				}
			},
		},
		{
			name: "malformed arguments are repaired",
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("create_plan", `{"tasks": [{"id": "a"`)),
				llmtest.Calls(llmtest.Call("create_plan", validPlan)),
			},
			requests: 2,
			check: func(t *testing.T, f *fixture, _ *Plan) {
				if m := f.lastMessage(t, 1); !strings.Contains(m.Content, "plan rejected: create_plan arguments are not valid JSON") {
					t.Errorf("tool result = %q", m.Content)
				}
			},
		},
		{
			name: "repairs exhausted",
			opts: Options{MaxRepairs: 1},
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("create_plan", unknownDepPlan)),
				llmtest.Calls(llmtest.Call("create_plan", unknownDepPlan)),
			},
			wantErr:  ErrInvalidPlan,
			errText:  `after 1 repairs: task "b" depends on unknown task "z"`,
			requests: 2,
		},
		{
			name: "read-only tools explore the workspace",
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("list_dir", map[string]any{}), llmtest.Call("read_file", map[string]any{"path": "main.go"})),
				llmtest.Calls(llmtest.Call("create_plan", validPlan)),
			},
			requests: 2,
			check: func(t *testing.T, f *fixture, _ *Plan) {
				msgs := f.srv.Requests()[1].Messages
				listing, file := msgs[len(msgs)-2], msgs[len(msgs)-1]
				if !strings.Contains(listing.Content, "main.go") || !strings.Contains(file.Content, "func main() {}") {
					t.Errorf("tool results:\n%s\n%s", listing.Content, file.Content)
				}
				if calls := f.rec.ofType(events.ToolCall); len(calls) != 3 || calls[1].Tool != "read_file" {
					t.Errorf("tool_call events = %+v", calls)
				}
			},
		},
		{
			name: "write tools are refused",
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "evil.txt", "content": "x"}),
					llmtest.Call("shell_exec", map[string]any{"command": "touch evil2.txt"})),
				llmtest.Calls(llmtest.Call("create_plan", validPlan)),
			},
			requests: 2,
			check: func(t *testing.T, f *fixture, _ *Plan) {
				msgs := f.srv.Requests()[1].Messages
				for i, name := range []string{"write_file", "shell_exec"} {
					got := msgs[len(msgs)-2+i].Content
					if !strings.HasPrefix(got, "tool "+name+" is not available to the planner (read-only)") {
						t.Errorf("answer to %s = %q", name, got)
					}
				}
				for _, name := range []string{"evil.txt", "evil2.txt"} {
					if _, err := os.Stat(filepath.Join(f.ws, name)); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s exists after planning (stat: %v)", name, err)
					}
				}
			},
		},
		{
			name: "every call of the accepting response is answered",
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("create_plan", validPlan), llmtest.Call("create_plan", cyclicPlan),
					llmtest.Call("read_file", map[string]any{"path": "main.go"})),
			},
			requests: 1,
			check: func(t *testing.T, f *fixture, p *Plan) {
				results := f.rec.ofType(events.ToolResult)
				if len(results) != 3 || !strings.HasPrefix(results[1].Text, "ignored: a plan was already accepted") {
					t.Errorf("tool_result events = %+v", results)
				}
				if p.Title != "greeter" {
					t.Errorf("accepted plan = %+v, want the first one", p)
				}
			},
		},
		{
			name: "text answer is nudged once",
			replies: []llmtest.Reply{
				llmtest.Text("Here is my plan: first the lib, then the cli."),
				llmtest.Calls(llmtest.Call("create_plan", validPlan)),
			},
			requests: 2,
			check: func(t *testing.T, f *fixture, _ *Plan) {
				if m := f.lastMessage(t, 1); m.Role != llm.RoleUser || !strings.Contains(m.Content, "call create_plan") {
					t.Errorf("second request ends with %s %q, want the nudge", m.Role, m.Content)
				}
			},
		},
		{
			name:     "text answer after the nudge",
			replies:  []llmtest.Reply{llmtest.Text("plan: a"), llmtest.Text("plan: b")},
			wantErr:  ErrNoPlan,
			errText:  `answered with text twice instead of calling create_plan: "plan: b"`,
			requests: 2,
		},
		{
			name: "turn limit",
			opts: Options{MaxTurns: 2},
			replies: []llmtest.Reply{
				llmtest.Calls(llmtest.Call("glob", map[string]any{"pattern": "*.go"})),
				llmtest.Calls(llmtest.Call("grep", map[string]any{"pattern": "main"})),
			},
			wantErr:  ErrNoPlan,
			errText:  "within 2 model turns",
			requests: 2,
		},
		{
			name:     "server error",
			replies:  []llmtest.Reply{{Status: 400, ErrorBody: `{"error":{"message":"model not found","type":"invalid_request_error"}}`}},
			errText:  "model not found",
			requests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.opts, tt.replies...)
			p, usage, err := f.plan.Plan(t.Context(), "add a greeter")
			switch {
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("Plan() error = %v, want %v containing %q", err, tt.wantErr, tt.errText)
				}
			case err != nil:
				t.Fatalf("Plan: %v", err)
			}
			if got := len(f.srv.Requests()); got != tt.requests {
				t.Errorf("server got %d requests, want %d", got, tt.requests)
			}
			if rej := f.srv.Rejections(); len(rej) > 0 && tt.name != "server error" {
				t.Errorf("server rejected requests: %v", rej)
			}
			if err == nil && usage.Prompt == 0 {
				t.Errorf("usage = %+v, want the server's figures", usage)
			}
			if strings.Contains(err2text(err), "test-key") {
				t.Errorf("error leaks the API key: %v", err)
			}
			if tt.check != nil {
				tt.check(t, f, p)
			}
		})
	}
}

func err2text(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPlannerOffersOnlyReadOnlyTools asserts on the wire: the tools the
// model is offered, and the first message it sees.
func TestPlannerOffersOnlyReadOnlyTools(t *testing.T) {
	f := newFixture(t, Options{WorkspaceView: "main.go\ncmd/", RepoMap: "main.go: func main()", ProjectDoc: "AGENTS.md:\nRun make check."},
		llmtest.Calls(llmtest.Call("create_plan", validPlan)))
	if _, _, err := f.plan.Plan(t.Context(), "add a greeter"); err != nil {
		t.Fatal(err)
	}
	req := f.srv.Requests()[0]
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Function.Name)
	}
	slices.Sort(names)
	if want := []string{"create_plan", "glob", "grep", "list_dir", "read_file"}; !slices.Equal(names, want) {
		t.Errorf("offered tools = %v, want %v", names, want)
	}
	if req.Messages[0].Role != llm.RoleSystem || !strings.Contains(req.Messages[0].Content, "call create_plan exactly once") {
		t.Errorf("system prompt = %q", req.Messages[0].Content)
	}
	user := req.Messages[1].Content
	for _, want := range []string{"Goal:\nadd a greeter", "main.go\ncmd/", "main.go: func main()",
		"The project's instructions for coding agents (every task's agent gets them too; plan by them):\nAGENTS.md:\nRun make check.\n"} {
		if !strings.Contains(user, want) {
			t.Errorf("first user message lacks %q:\n%s", want, user)
		}
	}
}

func TestPlannerEmptyGoal(t *testing.T) {
	f := newFixture(t, Options{})
	if _, _, err := f.plan.Plan(t.Context(), "  "); err == nil || !strings.Contains(err.Error(), "the goal is empty") {
		t.Fatalf("Plan(\"\") error = %v", err)
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Errorf("an empty goal sent %d requests", n)
	}
}
