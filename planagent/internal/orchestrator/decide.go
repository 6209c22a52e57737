package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// ChatClient is the part of the llm client the decider uses.
type ChatClient interface {
	Chat(ctx context.Context, req llm.Request, onToken func(string)) (*llm.Response, error)
}

// LLMDecider asks the model what to do after a failure. Its system message
// starts with DeciderMarker so test servers can recognise the request.
type LLMDecider struct {
	Client ChatClient
	Model  string
}

// DeciderMarker opens the decider's system message.
const DeciderMarker = "You decide what happens after a task of a plan failed."

type decideArgs struct {
	Action string      `json:"action"`
	Reason string      `json:"reason"`
	Hints  []string    `json:"hints"`
	Tasks  []plan.Task `json:"tasks"`
}

func decideTool() llm.Tool {
	schema := json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["retry", "replan", "continue", "abort"],
      "description": "retry: run the failed task again with hints; replan: replace every unfinished task with new tasks; continue: go on without it (its dependants are skipped); abort: stop the run"},
    "reason": {"type": "string", "description": "one sentence: why"},
    "hints": {"type": "array", "items": {"type": "string"}, "description": "for retry: concrete advice for the next attempt"},
    "tasks": {"type": "array", "description": "for replan: the new unfinished tasks (may depend on completed ones)",
      "items": {"type": "object", "properties": {
        "id": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"},
        "dependencies": {"type": "array", "items": {"type": "string"}},
        "acceptance": {"type": "array", "items": {"type": "string"}}},
        "required": ["id", "description", "dependencies"]}}
  },
  "required": ["action", "reason"]
}`)
	return llm.Tool{Name: "decide", Description: "Decide what to do about the failed task.", Parameters: schema}
}

// Decide asks the model; an unusable answer (or an LLM error) becomes
// "continue", so a flaky model can never stall the run.
func (d *LLMDecider) Decide(ctx context.Context, f Failure) Verdict {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %q (%s) failed on attempt %d.\n\nError:\n%s\n\nAttempts left: %d\n\nPlan:\n%s\n",
		f.Task.ID, titleOf(f.Task), f.Task.Attempts, f.Error, f.AttemptsLeft, f.PlanSummary)
	if f.AttemptsLeft <= 0 {
		b.WriteString("\nNo retries are left: choose replan, continue or abort.\n")
	}
	resp, err := d.Client.Chat(ctx, llm.Request{
		Model: d.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: DeciderMarker + " Call the decide tool exactly once. Prefer retry with specific hints when the error looks fixable, continue when the task is not essential, replan when the plan itself was wrong, abort only when nothing useful can be done."},
			{Role: llm.RoleUser, Content: b.String()},
		},
		Tools: []llm.Tool{decideTool()},
	}, nil)
	if err != nil {
		return Verdict{Action: Continue, Reason: "no decision: the model request failed (" + oneLine(err.Error(), 200) + "); going on with the rest", Invalid: err.Error()}
	}
	v := Verdict{Usage: resp.Usage}
	for _, tc := range resp.Message.ToolCalls {
		if tc.Name != "decide" {
			continue
		}
		var a decideArgs
		if err := json.Unmarshal([]byte(tc.Arguments), &a); err != nil {
			v.Action, v.Invalid = Continue, "decide arguments are not valid JSON: "+err.Error()
			v.Reason = "no decision: " + v.Invalid + "; going on with the rest"
			return v
		}
		switch Choice(a.Action) {
		case Retry, Replan, Continue, Abort:
		default:
			v.Action, v.Invalid = Continue, fmt.Sprintf("unknown action %q", a.Action)
			v.Reason = "no decision: the model chose " + v.Invalid + "; going on with the rest"
			return v
		}
		v.Action, v.Reason, v.Hints, v.Replan = Choice(a.Action), strings.TrimSpace(a.Reason), a.Hints, a.Tasks
		if v.Reason == "" || strings.EqualFold(v.Reason, "n/a") {
			v.Reason = "(the model gave no reason for " + a.Action + ")"
		}
		return v
	}
	v.Action, v.Invalid = Continue, "the model did not call decide"
	v.Reason = "no decision: the model did not call decide; going on with the rest"
	return v
}

// replanTasks validates a replan like a plan and turns it into graph tasks.
// The tasks that stay (completed and in progress) are validated together
// with the new ones, so the rules and limits of plan.Validate (ids that are
// file names, the reserved "summary", known dependencies, no cycle, size)
// hold for the graph that will run.
func replanTasks(g *taskgraph.Graph, tasks []plan.Task) ([]taskgraph.Task, error) {
	if len(tasks) == 0 {
		return nil, errNoReplan
	}
	var whole plan.Plan
	kept := map[string]taskgraph.Status{}
	for _, t := range g.Tasks() {
		if t.Status == taskgraph.Completed || t.Status == taskgraph.InProgress {
			kept[t.ID] = t.Status
			whole.Tasks = append(whole.Tasks, plan.PlanTask(t))
		}
	}
	out := make([]taskgraph.Task, 0, len(tasks))
	for _, t := range tasks {
		if st, ok := kept[t.ID]; ok {
			return nil, fmt.Errorf("task %q is already %s and cannot be replaced: give the new task another id", t.ID, st)
		}
		whole.Tasks = append(whole.Tasks, t)
		out = append(out, plan.GraphTask(t))
	}
	if err := plan.Validate(&whole, plan.Limits{}); err != nil {
		return nil, err
	}
	return out, nil
}
