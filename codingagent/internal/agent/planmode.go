package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/tools"
)

// Turn shapes one Send: the chat's mode for that input.
type Turn struct {
	// PlanMode is the chat's plan mode: only read-only tools and create_plan
	// are offered, and a plan the model makes is kept for the person to
	// review (Result.Plan), not carried out.
	PlanMode bool
	// NoPlanning withholds create_plan even when Options.Planning is set
	// (a todo being carried out should not plan again).
	NoPlanning bool
}

// ToolRequest is a tool call about to run, for Options.Approve.
type ToolRequest struct {
	Tool   string
	Args   string // JSON
	CallID string
	// ReadOnly is the tool's own word that it changes nothing (an MCP
	// tool's readOnlyHint), for approval rules beyond the built-in names.
	ReadOnly bool
}

// Approval answers a ToolRequest. A refusal's Reason becomes the tool result
// the model sees, so it should say what the model (or the person) can do.
type Approval struct {
	Allow  bool
	Reason string
}

// SendTurn is Send with the turn's mode.
func (a *Agent) SendTurn(ctx context.Context, input string, t Turn) (Result, error) {
	a.turn = t
	defer func() { a.turn = Turn{} }()
	return a.Send(ctx, input)
}

// offered is the tool set of the next request: plan mode keeps the
// read-only tools, and create_plan is there unless a plan is being carried
// out (no recursive planning) or the turn withholds it.
func (a *Agent) offered() *tools.Set {
	set := a.tools
	if a.turn.PlanMode {
		set = set.ReadOnly()
	}
	executing := a.run != nil && a.run.executing
	if (a.opts.Planning || a.turn.PlanMode) && !a.turn.NoPlanning && !executing {
		set = set.With(a.planTool)
	}
	return set
}

// gate decides whether call c may run: it must be offered now, and
// Options.Approve (when set) must allow it.
func (a *Agent) gate(ctx context.Context, c llm.ToolCall) (bool, string) {
	name := c.Name
	t, ok := a.offered().Get(name)
	if !ok {
		if _, exists := a.tools.Get(name); exists && a.turn.PlanMode {
			return false, fmt.Sprintf("%s is not available in plan mode: only read-only tools and create_plan are; "+
				"describe the change in the plan instead (the person leaves plan mode with /mode direct)", name)
		}
		return true, "" // unknown tools get tools.Call's own answer naming the available ones
	}
	if a.opts.Approve == nil || name == CreatePlanToolName {
		return true, ""
	}
	ap := a.opts.Approve(ctx, ToolRequest{Tool: name, Args: c.Arguments, CallID: c.ID, ReadOnly: t.ReadOnly()})
	if ap.Allow {
		return true, ""
	}
	reason := strings.TrimSpace(ap.Reason)
	if reason == "" {
		reason = "the person declined this call"
	}
	return false, "not run: " + reason
}

// planTool is create_plan: it validates the plan, keeps it for the result
// and emits plan_created.
type planTool struct{ a *Agent }

func (planTool) Name() string   { return CreatePlanToolName }
func (planTool) ReadOnly() bool { return true }

func (planTool) Definition() llm.Tool {
	return llm.Tool(planspec.CreatePlanTool(planspec.ToolOptions{
		Description: "Make a plan for a complex request (several files, dependent steps, analysis before changes). " +
			"Do not use it for questions or small single-file changes: answer or act directly. " +
			"An invalid plan is rejected with the problem; fix it and call again.",
		TaskRisks: true,
		Testing:   true,
	}))
}

func (t planTool) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	a := t.a
	p, err := planspec.Parse(string(args))
	if err == nil {
		err = planspec.Validate(p, planspec.Limits{})
	}
	if err != nil {
		return tools.Result{IsError: true, Content: "invalid plan: " + planspec.Problem(err) + "; fix the plan and call create_plan again"}, nil
	}
	a.run.plan = p
	a.emit(events.Event{Type: events.PlanCreated, Text: planHeadline(p), Data: map[string]any{"plan": p}})
	if a.turn.PlanMode {
		return tools.Result{Content: fmt.Sprintf("Plan saved (%d tasks). The person reviews it (/plan show) and runs it as todos "+
			"(/plan to-todos, /todos execute-all); do not start the work now. Reply with a short summary of the plan.", len(p.Tasks))}, nil
	}
	a.run.pending = p
	return tools.Result{Content: fmt.Sprintf("Plan accepted (%d tasks). Its tasks will now be given to you one at a time.", len(p.Tasks))}, nil
}

func planHeadline(p *Plan) string {
	title := strings.TrimSpace(p.Title)
	if title == "" {
		title = "plan"
	}
	return fmt.Sprintf("%s (%d tasks)", title, len(p.Tasks))
}

// executePlan carries out p's steps in dependency order, one user message
// and one tool loop each, with step events around
// each; the first step that does not complete ends the plan.
func (a *Agent) executePlan(ctx context.Context, p *Plan) Result {
	steps, err := planspec.Order(p)
	if err != nil { // Validate ran already; this is a safeguard
		return Result{Status: Failed, Error: err.Error()}
	}
	a.run.executing = true
	defer func() { a.run.executing = false }()
	total := Result{Status: Completed}
	for i, s := range steps {
		data := map[string]any{"step_index": i, "step_id": s.ID, "steps": len(steps)}
		a.emit(events.Event{Type: events.StepStart, Text: StepTitle(s), Data: data})
		res := Result{Status: Interrupted, Error: "interrupted"}
		if ctx.Err() == nil {
			if err := a.appendMessage(userMessage(formatStep(p, s, i, len(steps)))); err != nil {
				res = Result{Status: Failed, Error: err.Error()}
			} else {
				res = a.loop(ctx)
			}
		}
		total.Iterations += res.Iterations
		text := res.Answer
		if res.Status != Completed {
			text = res.Error
		}
		a.emit(events.Event{Type: events.StepComplete, Status: string(res.Status), Text: text, Data: data})
		if res.Status != Completed {
			reason := fmt.Sprintf("plan stopped at step %s (%d of %d): %s", s.ID, i+1, len(steps), res.Error)
			a.emit(events.Event{Type: events.PlanComplete, Status: string(res.Status), Text: reason,
				Data: map[string]any{"steps": len(steps), "completed": i}})
			res.Iterations, res.Error = total.Iterations, reason
			return res
		}
		total.Answer = res.Answer
	}
	a.emit(events.Event{Type: events.PlanComplete, Status: string(Completed),
		Text: fmt.Sprintf("%d of %d steps completed", len(steps), len(steps)),
		Data: map[string]any{"steps": len(steps), "completed": len(steps)}})
	return total
}

// formatStep is the user message that hands the model one step.
func formatStep(p *Plan, s PlanStep, i, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Step %d of %d of the plan %q — %s: %s\n\n%s\n", i+1, n, strings.TrimSpace(p.Title), s.ID, StepTitle(s), strings.TrimSpace(s.Description))
	writeList(&b, "Risks", s.Risks)
	b.WriteString("\nWork on this step only. When it is done, reply without tool calls with a short report.")
	return b.String()
}
