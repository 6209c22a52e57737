package plan

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/tools"
)

//go:embed planner.md
var systemPrompt string

// ChatClient is the part of *llmclient.Client the planner uses.
type ChatClient interface {
	Chat(ctx context.Context, req llm.Request, onToken func(string)) (*llm.Response, error)
}

// Options tune a Planner. Zero values take the defaults named on each field.
type Options struct {
	MaxTurns      int         // model calls per Plan (default 30)
	MaxRepairs    int         // rejected plans the model may fix (default 3)
	Events        events.Sink // tool_call, tool_result, plan_created (default: discard)
	WorkspaceView string      // shallow listing of the workspace for the first message
	RepoMap       string      // optional symbol map of the workspace
	Limits        Limits      // plan limits (zero fields: the planspec.Default* constants)

	// ProjectDoc is the project's own instructions for coding agents
	// (its AGENTS.md or CLAUDE.md, named on the first line), or "".
	ProjectDoc string
}

// Planner asks the model for a plan of a goal, letting it look at the
// workspace with read-only tools first.
type Planner struct {
	client ChatClient
	tools  *tools.Set
	opts   Options
}

// NewPlanner returns a planner. Only the read-only tools of set are offered
// or run, whatever set holds, so planning can never change the workspace.
func NewPlanner(client ChatClient, set *tools.Set, opts Options) *Planner {
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = 30
	}
	if opts.MaxRepairs <= 0 {
		opts.MaxRepairs = 3
	}
	if opts.Events == nil {
		opts.Events = events.Discard
	}
	return &Planner{client: client, tools: set.ReadOnly(), opts: opts}
}

// Plan runs the planning conversation for goal and returns the first valid
// plan the model submits through create_plan, with the tokens used (also
// when it fails).
func (p *Planner) Plan(ctx context.Context, goal string) (*Plan, llm.Usage, error) {
	var usage llm.Usage
	if strings.TrimSpace(goal) == "" {
		return nil, usage, errors.New("planning: the goal is empty: say what should be built or changed")
	}
	c := &conversation{planner: p, msgs: []llm.Message{
		{Role: llm.RoleSystem, Content: systemPrompt},
		{Role: llm.RoleUser, Content: p.firstMessage(goal)},
	}}
	// planagent runs each task's acceptance commands, so the model may give them.
	defs := append(p.tools.Definitions(), llm.Tool(planspec.CreatePlanTool(planspec.ToolOptions{Acceptance: true, Attempts: true})))
	for turn := 0; turn < p.opts.MaxTurns; turn++ {
		if err := ctx.Err(); err != nil {
			return nil, usage, fmt.Errorf("planning: %w", err)
		}
		resp, err := p.client.Chat(ctx, llm.Request{Messages: c.msgs, Tools: defs}, nil)
		if err != nil {
			return nil, usage, fmt.Errorf("planning: %w", err)
		}
		usage.Add(resp.Usage)
		plan, err := c.handle(ctx, resp.Message)
		if err != nil || plan != nil {
			return plan, usage, err
		}
	}
	return nil, usage, fmt.Errorf("planning: %w within %d model turns: make the goal more specific or allow more turns", ErrNoPlan, p.opts.MaxTurns)
}

func (p *Planner) firstMessage(goal string) string {
	var b strings.Builder
	b.WriteString("Goal:\n" + strings.TrimSpace(goal) + "\n")
	if d := strings.TrimSpace(p.opts.ProjectDoc); d != "" {
		b.WriteString("\nThe project's instructions for coding agents (every task's agent gets them too; plan by them):\n" + d + "\n")
	}
	if v := strings.TrimSpace(p.opts.WorkspaceView); v != "" {
		b.WriteString("\nWorkspace (top levels; explore further with the tools):\n" + v + "\n")
	}
	if m := strings.TrimSpace(p.opts.RepoMap); m != "" {
		b.WriteString("\nRepository map (symbols per file):\n" + m + "\n")
	}
	b.WriteString("\nExplore as needed, then call create_plan.")
	return b.String()
}

// conversation is the state of one Plan call.
type conversation struct {
	planner *Planner
	msgs    []llm.Message
	repairs int  // rejected plans so far
	nudged  bool // the model was told once to call create_plan
}

// handle appends the assistant message and the answers to all its tool
// calls. It returns the accepted plan, or an error when planning must stop.
func (c *conversation) handle(ctx context.Context, msg llm.Message) (*Plan, error) {
	if len(msg.ToolCalls) == 0 {
		if c.nudged {
			return nil, fmt.Errorf("planning: %w: the model answered with text twice instead of calling create_plan: %q",
				ErrNoPlan, events.Shorten(strings.TrimSpace(msg.Content), 200))
		}
		c.nudged = true
		// An assistant message with neither content nor tool calls is
		// rejected by the API, so an empty answer is left out of history.
		if strings.TrimSpace(msg.Content) != "" {
			c.msgs = append(c.msgs, msg)
		}
		c.msgs = append(c.msgs, llm.Message{Role: llm.RoleUser,
			Content: "Do not answer with text: call create_plan with the complete plan now."})
		return nil, nil
	}
	c.msgs = append(c.msgs, msg)
	var (
		accepted *Plan
		rejected error // the last rejection in this message
	)
	// Every call is answered, even after a plan is accepted, so the history
	// stays valid for the API (no tool call without its answer).
	for _, call := range msg.ToolCalls {
		name, args := call.Name, call.Arguments
		c.emit(events.Event{Type: events.ToolCall, Tool: name, CallID: call.ID, Args: args})
		var res tools.Result
		switch {
		case name == CreatePlanToolName && accepted != nil:
			res = tools.Result{Content: "ignored: a plan was already accepted in this response", IsError: true}
		case name == CreatePlanToolName:
			plan, err := c.check(args)
			if err != nil {
				rejected = err
				res = tools.Result{Content: "plan rejected: " + planspec.Problem(err) + ". Call create_plan again with a fixed plan.", IsError: true}
			} else {
				accepted = plan
				res = tools.Result{Content: fmt.Sprintf("plan accepted: %d tasks", len(plan.Tasks))}
			}
		default:
			var err error
			if res, err = c.run(ctx, name, args); err != nil {
				return nil, fmt.Errorf("planning: %w", err)
			}
		}
		c.answer(call, res)
	}
	if accepted != nil {
		c.emit(events.Event{Type: events.PlanCreated, Text: accepted.Title,
			Data: map[string]any{"tasks": len(accepted.Tasks), "repairs": c.repairs}})
		return accepted, nil
	}
	if rejected != nil {
		c.repairs++
		if c.repairs > c.planner.opts.MaxRepairs {
			return nil, fmt.Errorf("planning: the model did not fix its plan after %d repairs: %w", c.planner.opts.MaxRepairs, rejected)
		}
	}
	return nil, nil
}

// check parses and validates create_plan arguments.
func (c *conversation) check(args string) (*Plan, error) {
	plan, err := planspec.Parse(args)
	if err != nil {
		return nil, err
	}
	if err := Validate(plan, c.planner.opts.Limits); err != nil {
		return nil, err
	}
	return plan, nil
}

// problem is the part of a rejection the model needs: the exact problems,
// without the "invalid plan" sentinel prefix that only callers branch on.
// run executes a read-only tool. Names that are not in the read-only set,
// write tools included, get an error result the model can act on.
func (c *conversation) run(ctx context.Context, name, args string) (tools.Result, error) {
	set := c.planner.tools
	if _, ok := set.Get(name); !ok {
		return tools.Result{IsError: true, Content: fmt.Sprintf("tool %s is not available to the planner (read-only); use %s, then %s",
			name, strings.Join(set.Names(), ", "), CreatePlanToolName)}, nil
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	res, err := tools.Call(ctx, set, name, args)
	if err != nil {
		return res, fmt.Errorf("tool %s: %w", name, err)
	}
	return res, nil
}

func (c *conversation) answer(call llm.ToolCall, res tools.Result) {
	content := res.Content
	if content == "" {
		// The request omits empty content, and a tool message without content is refused.
		content = "(no output)"
	}
	c.emit(events.Event{Type: events.ToolResult, Tool: call.Name, CallID: call.ID, Text: content, IsError: res.IsError})
	c.msgs = append(c.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: content})
}

func (c *conversation) emit(e events.Event) { c.planner.opts.Events.Emit(e) }
