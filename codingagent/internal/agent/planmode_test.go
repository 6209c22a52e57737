package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func twoStepPlan() map[string]any {
	return map[string]any{"title": "greet", "tasks": []map[string]any{
		{"id": "a", "description": "write a.txt", "dependencies": []string{}},
		{"id": "b", "description": "write b.txt", "dependencies": []string{"a"}},
	}}
}

func TestCreatePlanRunsStepsWithPlanEvents(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("create_plan", twoStepPlan())),
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "a.txt", "content": "A"})),
		llmtest.Text("a done"),
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "b.txt", "content": "B"})),
		llmtest.Text("b done"),
	)
	a := e.agent(func(o *Options) { o.Planning = true })
	res, err := a.Send(t.Context(), "make a and b")
	if err != nil || res.Status != Completed {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	e.noRejections()
	if res.Plan == nil || len(res.Plan.Tasks) != 2 || res.Answer != "b done" {
		t.Errorf("result plan %+v answer %q", res.Plan, res.Answer)
	}
	var got []string
	for _, ev := range e.events.events {
		switch ev.Type {
		case events.ResponseStart:
			got = append(got, string(ev.Type)+":"+ev.Mode)
		case events.PlanCreated, events.StepStart, events.StepComplete, events.PlanComplete, events.ResponseEnd:
			got = append(got, string(ev.Type))
		}
	}
	want := []string{"response_start:plan", "plan_created", "step_start", "step_complete", "step_start", "step_complete", "plan_complete", "response_end"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if e.read("a.txt") != "A" || e.read("b.txt") != "B" {
		t.Error("steps did not write their files")
	}
	// While the steps run, create_plan is not offered (no recursive planning).
	reqs := e.srv.Requests()
	if slices.Contains(toolNames(reqs[1]), "create_plan") || !slices.Contains(toolNames(reqs[0]), "create_plan") {
		t.Errorf("tools of request 1 %v, of request 2 %v", toolNames(reqs[0]), toolNames(reqs[1]))
	}
}

func TestPlanModeOffersReadOnlyToolsAndKeepsThePlan(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "x.txt", "content": "x"})),
		llmtest.Calls(llmtest.Call("create_plan", twoStepPlan())),
		llmtest.Text("here is the plan"),
	)
	a := e.agent(nil)
	res, err := a.SendTurn(t.Context(), "plan it", Turn{PlanMode: true})
	if err != nil || res.Status != Completed || res.Plan == nil {
		t.Fatalf("SendTurn = %+v, %v", res, err)
	}
	e.noRejections()
	names := toolNames(e.srv.Requests()[0])
	for _, n := range []string{"write_file", "edit_file", "shell_exec", "task"} {
		if slices.Contains(names, n) {
			t.Errorf("plan mode offers %s: %v", n, names)
		}
	}
	if !slices.Contains(names, "create_plan") || !slices.Contains(names, "read_file") {
		t.Errorf("plan mode tools = %v", names)
	}
	if !strings.Contains(allText(e.srv.Requests()[1]), "not available in plan mode") {
		t.Error("the refused write_file was not explained to the model")
	}
	if len(e.events.ofType(events.StepStart)) != 0 {
		t.Error("plan mode carried out the plan")
	}
	// The next plain Send is direct again.
	e.srv.Enqueue(llmtest.Text("ok"))
	if _, err := a.Send(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	if n := toolNames(e.srv.Requests()[3]); !slices.Contains(n, "write_file") {
		t.Errorf("direct mode after plan mode offers %v", n)
	}
}

func TestApproveRefusalAnswersEveryCall(t *testing.T) {
	e := newEnv(t)
	e.srv.Enqueue(
		llmtest.Calls(
			llmtest.Call("shell_exec", map[string]string{"command": "echo hi > y.txt"}),
			llmtest.Call("read_file", map[string]string{"path": "y.txt"}),
		),
		llmtest.Text("I was not allowed"),
	)
	var asked []string
	a := e.agent(func(o *Options) {
		o.Approve = func(_ context.Context, r ToolRequest) Approval {
			asked = append(asked, r.Tool)
			return Approval{Reason: "shell needs --approval yolo"}
		}
	})
	res, err := a.Send(t.Context(), "run it")
	if err != nil || res.Status != Completed {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	e.noRejections()
	if !slices.Equal(asked, []string{"shell_exec"}) {
		t.Errorf("asked about %v", asked)
	}
	text := allText(e.srv.Requests()[1])
	if !strings.Contains(text, "shell needs --approval yolo") || !strings.Contains(text, "earlier call of this response was refused") {
		t.Errorf("second request does not explain the refusal:\n%s", text)
	}
}

// TestCreatePlanRejection: the rules are planspec's (tested there); this
// checks the chat hands their problem back to the model and keeps no plan.
func TestCreatePlanRejection(t *testing.T) {
	tests := []struct {
		name string
		args any
		want string
	}{
		{name: "cycle", args: map[string]any{"tasks": []map[string]any{
			{"id": "a", "description": "x", "dependencies": []string{"b"}},
			{"id": "b", "description": "y", "dependencies": []string{"a"}},
		}}, want: "invalid plan: dependency cycle: a -> b -> a: remove one of these dependencies; fix the plan and call create_plan again"},
		{name: "malformed", args: `{"tasks": [`, want: "invalid plan: create_plan arguments are not valid JSON for the schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.srv.Enqueue(llmtest.Calls(llmtest.Call("create_plan", tt.args)), llmtest.Text("no plan then"))
			a := e.agent(func(o *Options) { o.Planning = true })
			res, err := a.Send(t.Context(), "plan it")
			if err != nil || res.Status != Completed || res.Plan != nil {
				t.Fatalf("Send = %+v, %v", res, err)
			}
			e.noRejections()
			if text := allText(e.srv.Requests()[1]); !strings.Contains(text, tt.want) {
				t.Errorf("second request lacks %q:\n%s", tt.want, text)
			}
		})
	}
}
