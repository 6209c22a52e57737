package chat

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func TestSecondTurnUsesTheFirstAnswer(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(llmtest.Text("The code word is PELICAN."), llmtest.Text("PELICAN, as I said."))
	out := e.run("s1", "pick a code word\nwhat was it?\n/exit\n", nil)
	e.noRejections()
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2\n%s", len(reqs), out)
	}
	if !strings.Contains(allText(reqs[1]), "The code word is PELICAN.") || !strings.Contains(allText(reqs[1]), "pick a code word") {
		t.Errorf("second request lacks the first turn:\n%s", allText(reqs[1]))
	}
	if !strings.Contains(out, "PELICAN, as I said.") {
		t.Errorf("answer not printed:\n%s", out)
	}
}

func TestContinueRestoresTheConversation(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(llmtest.Text("Noted: the port is 8123."))
	e.run("first", "the port is 8123\n", nil) // ends at end of input (Ctrl-D)

	id, resumed, err := ResolveSession(e.sessions, true, "", time.Now())
	if err != nil || !resumed || id != "first" {
		t.Fatalf("ResolveSession(--continue) = %q, %v, %v", id, resumed, err)
	}
	e.srv.Enqueue(llmtest.Text("8123"))
	out := e.run(id, "which port?\n/sessions\n", nil)
	e.noRejections()
	reqs := e.srv.Requests()
	if text := allText(reqs[1]); !strings.Contains(text, "the port is 8123") || !strings.Contains(text, "Noted: the port is 8123.") {
		t.Errorf("continued request lacks the earlier conversation:\n%s", text)
	}
	if !strings.Contains(out, "2 messages restored") || !strings.Contains(out, "* first") {
		t.Errorf("output:\n%s", out)
	}
	if _, _, err := ResolveSession(e.sessions, false, "nope", time.Now()); err == nil || !strings.Contains(err.Error(), "chat-nope.jsonl") {
		t.Errorf("--resume nope: %v", err)
	}
}

func TestPlanModeOffersNoWriteTools(t *testing.T) {
	for _, tt := range []struct{ name, enter string }{
		{"slash command", "/mode plan\n"},
		{"ctrl-p", "\x10\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.srv.Enqueue(llmtest.Text("Here is how I would do it."), llmtest.Text("direct again"))
			out := e.run("p", tt.enter+"how would you add caching?\n/mode direct\nok\n", nil)
			e.noRejections()
			reqs := e.srv.Requests()
			names := toolNames(reqs[0])
			for _, w := range []string{"write_file", "edit_file", "shell_exec", "task"} {
				if slices.Contains(names, w) {
					t.Errorf("plan mode offers %s: %v", w, names)
				}
			}
			if !slices.Contains(names, "create_plan") || !slices.Contains(names, "read_file") {
				t.Errorf("plan mode tools = %v", names)
			}
			if !slices.Contains(toolNames(reqs[1]), "write_file") {
				t.Errorf("direct mode tools = %v", toolNames(reqs[1]))
			}
			if !strings.Contains(out, "[PLAN] > ") {
				t.Errorf("prompt never showed [PLAN]:\n%s", out)
			}
		})
	}
}

func TestCreatePlanResponseEmitsPlanEvents(t *testing.T) {
	e := newEnv(t)
	plan := map[string]any{"title": "two files", "tasks": []map[string]any{
		{"id": "one", "description": "create one.txt", "dependencies": []string{}},
		{"id": "two", "description": "create two.txt", "dependencies": []string{"one"}},
	}}
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("create_plan", plan)),
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "one.txt", "content": "1"})),
		llmtest.Text("one done"),
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "two.txt", "content": "2"})),
		llmtest.Text("two done"),
	)
	e.run("c", "create one.txt and two.txt\n", func(o *Options) { o.Approval = ApproveYolo })
	e.noRejections()
	var got []string
	for _, typ := range e.events.types() {
		if typ != "tool_call" && typ != "tool_result" {
			got = append(got, typ)
		}
	}
	want := []string{"response_start", "plan_created", "step_start", "step_complete", "step_start", "step_complete", "plan_complete", "response_end"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %v\nwant     %v", got, want)
	}
	if e.events.events[0].Mode != "plan" {
		t.Errorf("response_start mode = %q, want plan", e.events.events[0].Mode)
	}
	if s, _ := e.file("two.txt"); s != "2" {
		t.Errorf("two.txt = %q", s)
	}
	if st := e.state("c"); st.Plan == nil || len(st.Plan.Tasks) != 2 {
		t.Errorf("plan not kept in the session state: %+v", st.Plan)
	}
}

func TestInterruptDuringToolCallLeavesAValidHistory(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "sleep 5"})),
		llmtest.Text("fine, something else then"),
	)
	interrupts := make(chan os.Signal, 1)
	e.events.hook = func(ev events.Event) {
		if ev.Type == events.ToolCall && ev.Tool == "shell_exec" {
			interrupts <- os.Interrupt
		}
	}
	start := time.Now()
	out := e.run("i", "run the slow thing\nnever mind\n", func(o *Options) {
		o.Approval = ApproveYolo
		o.Interrupt = interrupts
	})
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the interrupted turn took %v: sleep 5 was not cancelled", d)
	}
	e.noRejections()
	if !strings.Contains(out, "(interrupted") || !strings.Contains(out, "fine, something else then") {
		t.Errorf("output:\n%s", out)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 || !strings.Contains(allText(reqs[1]), "cancelled") {
		t.Errorf("second request should carry the cancelled tool result:\n%s", allText(reqs[len(reqs)-1]))
	}
}

func TestApproval(t *testing.T) {
	write := llmtest.Call("write_file", map[string]string{"path": "w.txt", "content": "w"})
	shell := llmtest.Call("shell_exec", map[string]string{"command": "echo s > s.txt"})
	tests := []struct {
		name     string
		approval ApprovalMode
		call     llmtest.ToolCall
		answer   string // to the approval question
		file     string
		allowed  bool
		told     string // in the tool result the model sees
	}{
		{"no terminal refuses edits", "", write, "", "w.txt", false, "--approval auto_edit"},
		{"no terminal refuses shell", "", shell, "", "s.txt", false, "--approval yolo"},
		{"auto_edit allows edits", ApproveAutoEdit, write, "", "w.txt", true, ""},
		{"auto_edit refuses shell without terminal", ApproveAutoEdit, shell, "", "s.txt", false, "--approval yolo"},
		{"yolo allows shell", ApproveYolo, shell, "", "s.txt", true, ""},
		{"default asks: yes", ApproveDefault, write, "y\n", "w.txt", true, ""},
		{"default asks: no", ApproveDefault, shell, "no\n", "s.txt", false, "declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.srv.Enqueue(llmtest.Calls(tt.call), llmtest.Text("done"))
			out := e.run("a", "do it\n"+tt.answer, func(o *Options) { o.Approval = tt.approval })
			e.noRejections()
			if _, ok := e.file(tt.file); ok != tt.allowed {
				t.Errorf("%s exists = %v, want %v\n%s", tt.file, ok, tt.allowed, out)
			}
			reqs := e.srv.Requests()
			if tt.told != "" && !strings.Contains(allText(reqs[1]), tt.told) {
				t.Errorf("the model was not told %q:\n%s", tt.told, allText(reqs[1]))
			}
			if tt.approval == "" && !strings.Contains(out, "refused: "+tt.call.Name) {
				t.Errorf("refusal not printed:\n%s", out)
			}
			if tt.approval == ApproveDefault && !strings.Contains(out, "Allow "+tt.call.Name) {
				t.Errorf("no approval question:\n%s", out)
			}
		})
	}
}

func TestCommandsContextMemoryCompact(t *testing.T) {
	e := newEnv(t)
	mem := e.ws.Root() + "/../memory.md"
	if err := os.WriteFile(mem, []byte("- tests use go test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.srv.Enqueue(llmtest.Text("first"), llmtest.Text("second"), llmtest.Text("- summary of it all"))
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply { return llmtest.Text("- remembered") })
	out := e.run("m", "one\ntwo\n/context\n/memory\n/compact\n/help\n/bogus\n/exit\n", func(o *Options) {
		o.Agent.MemoryPath = mem
	})
	e.noRejections()
	for _, want := range []string{"context: ", "memory: 20 chars", "tests use go test", "compaction summary", "/todos list", "unknown command /bogus", "updating long-term memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(mem); !strings.Contains(string(b), "remembered") {
		t.Errorf("memory after the session = %q", b)
	}
}
