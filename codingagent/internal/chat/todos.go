package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
)

const todoUsage = "usage: /todos list | execute ID [--mode default|auto_edit] | execute-all [--mode default|auto_edit] | update ID STATUS | export [FILE] | clear"

func (c *Chat) todosCommand(ctx context.Context, args []string) {
	sub := "list"
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		c.listTodos()
	case "execute":
		mode, rest, err := modeFlag(args)
		if err != nil || len(rest) != 1 {
			c.printf("%s\n", todoUsage)
			return
		}
		tctx, done := c.turnContext(ctx)
		defer done()
		c.executeTodo(tctx, rest[0], mode)
	case "execute-all":
		mode, rest, err := modeFlag(args)
		if err != nil || len(rest) != 0 {
			c.printf("%s\n", todoUsage)
			return
		}
		tctx, done := c.turnContext(ctx)
		defer done()
		c.executeAll(tctx, mode)
	case "update":
		c.updateTodo(args)
	case "export":
		c.exportTodos(args)
	case "clear":
		c.state.Todos = nil
		if c.saveState() == nil {
			c.printf("todos cleared\n")
		}
	default:
		c.printf("%s\n", todoUsage)
	}
}

// modeFlag takes --mode VALUE (or --mode=VALUE) out of args.
func modeFlag(args []string) (ApprovalMode, []string, error) {
	var mode ApprovalMode
	var rest []string
	for i := 0; i < len(args); i++ {
		v, ok := strings.CutPrefix(args[i], "--mode=")
		if args[i] == "--mode" && i+1 < len(args) {
			v, ok = args[i+1], true
			i++
		}
		if !ok {
			rest = append(rest, args[i])
			continue
		}
		m, err := ParseApprovalMode(v)
		if err != nil {
			return "", nil, err
		}
		mode = m
	}
	return mode, rest, nil
}

func (c *Chat) listTodos() {
	if len(c.state.Todos) == 0 {
		c.printf("no todos: make a plan (/mode plan), then /plan to-todos\n")
		return
	}
	for _, t := range c.state.Todos {
		deps := ""
		if len(t.Dependencies) > 0 {
			deps = " (after " + strings.Join(t.Dependencies, ", ") + ")"
		}
		c.printf("%s %s  %s%s\n", t.Status.mark(), t.ID, t.Title, deps)
		if t.Status == TodoFailed && t.Error != "" {
			c.printf("      error: %s\n", oneLine(t.Error, 160))
		}
	}
	c.printf("%d of %d completed\n", c.state.count(TodoCompleted), len(c.state.Todos))
}

// executeTodo runs one todo with the agent; false when it did not complete.
// The status is saved before the run starts and after it ends, so the state
// on disk always says what happened.
func (c *Chat) executeTodo(ctx context.Context, id string, mode ApprovalMode) bool {
	i := c.state.index(id)
	if i < 0 {
		c.printf("no todo %q: /todos list shows them\n", id)
		return false
	}
	t := c.state.Todos[i]
	if t.Status == TodoCompleted {
		c.printf("todo %s is already completed (/todos update %s pending runs it again)\n", id, id)
		return true
	}
	if missing := c.state.unmet(i); len(missing) > 0 {
		c.printf("todo %s cannot run yet: it depends on %s, which must be completed first (run them, or mark them with /todos update ID completed)\n",
			id, strings.Join(missing, ", "))
		return false
	}
	c.state.Todos[i].Status, c.state.Todos[i].Error = TodoInProgress, ""
	if c.saveState() != nil {
		return false
	}
	c.approver.override = mode
	res := c.runTurn(ctx, c.todoMessage(t), agent.Turn{NoPlanning: true})
	c.approver.override = ""
	i = c.state.index(id) // the state as it is now, not as it was before the run
	switch res.Status {
	case agent.Completed:
		c.state.Todos[i].Status, c.state.Todos[i].Result = TodoCompleted, oneLine(res.Answer, 2000)
	case agent.Interrupted:
		c.state.Todos[i].Status = TodoPending
	default:
		c.state.Todos[i].Status, c.state.Todos[i].Error = TodoFailed, res.Error
	}
	if c.saveState() != nil {
		return false
	}
	c.printf("todo %s: %s\n", id, c.state.Todos[i].Status)
	return res.Status == agent.Completed
}

// executeAll runs ready todos one after another until all are completed,
// one fails, none is ready, or ctx ends. Each round picks from the current
// state, never from a copy taken before the batch: a todo that an earlier
// one changed is seen as it is now.
func (c *Chat) executeAll(ctx context.Context, mode ApprovalMode) {
	total := c.state.count(TodoPending) + c.state.count(TodoInProgress)
	if total == 0 {
		if len(c.state.Todos) == 0 && c.state.Plan != nil {
			c.printf("no todos yet: /plan to-todos turns the plan into todos, then /todos execute-all runs them\n")
			return
		}
		c.printf("no pending todos\n")
		return
	}
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			c.printf("execute-all interrupted: %d of %d todos pending; /todos execute-all continues\n", c.state.count(TodoPending), total)
			return
		}
		i := c.state.nextReady()
		if i < 0 {
			if left := c.state.count(TodoPending); left > 0 {
				c.printf("execute-all stopped: %d todos pending but none is ready (their dependencies are not completed); /todos list\n", left)
			} else {
				c.printf("all todos done\n")
			}
			return
		}
		t := c.state.Todos[i]
		c.printf("[%d/%d] %s: %s\n", n, total, t.ID, t.Title)
		if !c.executeTodo(ctx, t.ID, mode) {
			if ctx.Err() != nil {
				continue // reported at the top of the loop
			}
			c.printf("execute-all stopped: todo %s failed; %d todos still pending. Fix it, then /todos execute-all again\n",
				t.ID, c.state.count(TodoPending))
			return
		}
	}
}

// todoMessage hands one todo to the agent, with the reports of the todos
// it depends on.
func (c *Chat) todoMessage(t Todo) string {
	var b strings.Builder
	plan := ""
	if c.state.Plan != nil && strings.TrimSpace(c.state.Plan.Title) != "" {
		plan = fmt.Sprintf(" of the plan %q", strings.TrimSpace(c.state.Plan.Title))
	}
	fmt.Fprintf(&b, "Carry out todo %s%s: %s\n\n%s\n", t.ID, plan, t.Title, strings.TrimSpace(t.Description))
	if len(t.Dependencies) > 0 {
		b.WriteString("\nResults of the todos it depends on:\n")
		for _, d := range t.Dependencies {
			if j := c.state.index(d); j >= 0 {
				fmt.Fprintf(&b, "- %s: %s\n", d, c.state.Todos[j].Result)
			}
		}
	}
	b.WriteString("\nWork on this todo only. When it is done, reply without tool calls with a short report.")
	return b.String()
}

func (c *Chat) updateTodo(args []string) {
	if len(args) != 2 {
		c.printf("usage: /todos update ID pending|in_progress|completed|failed|skipped\n")
		return
	}
	i := c.state.index(args[0])
	if i < 0 {
		c.printf("no todo %q: /todos list shows them\n", args[0])
		return
	}
	st, err := parseTodoStatus(args[1])
	if err != nil {
		c.printf("%v\n", err)
		return
	}
	c.state.Todos[i].Status = st
	if c.saveState() == nil {
		c.printf("todo %s: %s\n", args[0], st)
	}
}

func (c *Chat) exportTodos(args []string) {
	path := filepath.Join(c.opts.SessionsDir, sessionPrefix+c.opts.SessionID+"-todos.json")
	if len(args) > 0 {
		path = args[0]
	}
	b, err := json.MarshalIndent(c.state, "", "  ")
	if err == nil {
		err = writeAtomic(path, append(b, '\n'))
	}
	if err != nil {
		c.printf("error: export todos: %v\n", err)
		return
	}
	c.printf("exported %d todos to %s\n", len(c.state.Todos), path)
}
