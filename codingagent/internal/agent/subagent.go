package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/tools"
)

const (
	taskToolName      = "task"
	resourceCap       = 20000 // chars of one resource given to a sub-agent
	resourcesCap      = 60000 // chars of all resources together
	parentContextCap  = 1500  // chars of the parent's task description passed on
	parentLastNoteCap = 1000  // chars of the parent's last assistant text passed on
)

const taskToolDescription = `Delegate a self-contained sub-problem to a sub-agent, which works on it with the same coding tools (but cannot delegate further) and returns its final report as this tool's result.
Use it for a separate investigation or change that needs many steps but little of your current context. Give a precise goal; list the files or directories it should start from as resources (their content is handed over); add hints (approach, pitfalls, conventions).`

// hintList accepts hints as a list of strings or, as models often send them,
// one string.
type hintList []string

func (h *hintList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		if strings.TrimSpace(one) != "" {
			*h = hintList{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("hints must be a string or a list of strings: %w", err)
	}
	*h = many
	return nil
}

type taskParams struct {
	Goal      string   `json:"goal" description:"What the sub-agent must achieve, precisely, including how to verify it"`
	Resources []string `json:"resources,omitempty" description:"Workspace paths (files or directories) the sub-agent should start from"`
	Hints     hintList `json:"hints,omitempty" description:"Implementation advice: approach, conventions, pitfalls"`
}

func newTaskTool(parent *Agent) tools.Tool {
	return tools.NewFunc(taskToolName, taskToolDescription, false,
		func(ctx context.Context, p taskParams) (tools.Result, error) { return parent.runSubagent(ctx, p) })
}

// runSubagent runs a child agent on p and turns its outcome into the tool result.
func (a *Agent) runSubagent(ctx context.Context, p taskParams) (tools.Result, error) {
	goal := strings.TrimSpace(p.Goal)
	if goal == "" {
		return tools.Result{Content: "goal is empty: say precisely what the sub-agent must achieve", IsError: true}, nil
	}
	a.subagents++
	parentID := "agent"
	if a.task != nil {
		parentID = a.task.ID
	}
	id := fmt.Sprintf("%s.sub%d", parentID, a.subagents)

	childOpts := a.opts
	childOpts.Subagent = true
	childOpts.Planning = false // a sub-agent carries out one goal: it does not plan
	childOpts.SessionPath = ""
	childOpts.Tools = withoutTool(a.opts.Tools, taskToolName)
	childOpts.Events = events.Func(func(e events.Event) {
		if e.TaskID == "" {
			e.TaskID = id
		}
		a.emit(e)
	})
	child, err := New(childOpts)
	if err != nil {
		return tools.Result{}, fmt.Errorf("start sub-agent: %w", err)
	}
	a.emit(events.Event{Type: events.SubagentStart, TaskID: id, Text: goal,
		Data: map[string]any{"resources": p.Resources, "hints": []string(p.Hints)}})
	brief := a.subagentBrief(ctx, goal, p.Resources, p.Hints)
	res, err := child.runTask(ctx, Task{ID: id, Title: goal}, brief)
	if err != nil {
		return tools.Result{}, fmt.Errorf("sub-agent %s: %w", id, err)
	}
	a.run.usage.Add(res.Usage)
	a.run.subagents = append(a.run.subagents, SubagentUsage{ID: id, Goal: goal, Usage: res.Usage})
	end := events.Event{Type: events.SubagentEnd, TaskID: id, Status: string(res.Status),
		Usage: &events.Usage{Prompt: res.Usage.Prompt, Completion: res.Usage.Completion, Cached: res.Usage.Cached,
			CacheWrite: res.Usage.CacheWrite, CostUSD: res.Usage.CostUSD}}
	out := tools.Result{}
	for _, f := range res.FilesChanged {
		out.Files = append(out.Files, tools.FileRef{Path: f, Changed: true})
	}
	switch res.Status {
	case Completed:
		out.Content = res.Answer
		end.Text = res.Answer
	case Interrupted:
		a.emit(end)
		return tools.Result{}, fmt.Errorf("sub-agent %s: %w", id, context.Cause(ctx))
	default:
		out.IsError = true
		out.Content = fmt.Sprintf("the sub-agent failed after %d model calls: %s", res.Iterations, res.Error)
		if last := lastAssistantText(child.hist.msgs); last != "" {
			out.Content += "\nIts last note: " + headTail(last, parentLastNoteCap)
		}
		end.Text = res.Error
	}
	if len(res.FilesChanged) > 0 {
		out.Content += "\n\nFiles changed by the sub-agent: " + strings.Join(res.FilesChanged, ", ")
	}
	a.emit(end)
	return out, nil
}

// subagentBrief is the child's first message: goal, a short summary of the
// parent's context, hints, and the resources' content.
func (a *Agent) subagentBrief(ctx context.Context, goal string, resources, hints []string) string {
	var b strings.Builder
	b.WriteString("# Goal\n\n" + goal + "\n")
	b.WriteString("\n## Context from the lead agent\n\n")
	if a.task != nil {
		fmt.Fprintf(&b, "The lead agent works on task %s: %s\n", a.task.ID, strings.TrimSpace(a.task.Title))
		if d := strings.TrimSpace(a.task.Description); d != "" {
			b.WriteString(headTail(d, parentContextCap) + "\n")
		}
	}
	if last := lastAssistantText(a.hist.msgs); last != "" {
		b.WriteString("\nIts latest note: " + headTail(last, parentLastNoteCap) + "\n")
	}
	writeList(&b, "Hints", hints)
	if len(resources) > 0 {
		b.WriteString("\n## Resources\n\n<Context>\n")
		left := resourcesCap
		for _, r := range resources {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			kind, text := a.readResource(ctx, r)
			if len(text) > left {
				text = cutRunes(text, max(left, 0)) + "\n[... cut: the resources' size limit was reached; read the rest with read_file ...]"
			}
			left -= len(text)
			fmt.Fprintf(&b, "<%s path=%q><![CDATA[\n%s\n]]></%s>\n", kind, r, strings.ReplaceAll(text, "]]>", "]]]]><![CDATA[>"), kind)
		}
		b.WriteString("</Context>\n")
	}
	return b.String()
}

// readResource reads a file with read_file or lists a directory with
// list_dir, through the same tools the model uses (same confinement, limits).
// kind is "File" or "Directory".
func (a *Agent) readResource(ctx context.Context, path string) (kind, text string) {
	kind, tool := "File", "read_file"
	if abs, err := a.opts.Workspace.Resolve(path); err == nil {
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			kind, tool = "Directory", "list_dir"
		}
	}
	args, _ := json.Marshal(map[string]string{"path": path})
	res, err := tools.Call(ctx, a.opts.Tools, tool, string(args))
	switch {
	case err != nil:
		return kind, fmt.Sprintf("(could not read %s: %v)", path, err)
	case res.IsError:
		return kind, "(" + res.Content + ")"
	}
	return kind, headTail(res.Content, resourceCap)
}

// withoutTool returns s minus the tool called name.
func withoutTool(s *tools.Set, name string) *tools.Set {
	var keep []tools.Tool
	for _, n := range s.Names() {
		if n == name {
			continue
		}
		if t, ok := s.Get(n); ok {
			keep = append(keep, t)
		}
	}
	return tools.NewSet(keep...)
}

func lastAssistantText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant && strings.TrimSpace(msgs[i].Content) != "" {
			return strings.TrimSpace(msgs[i].Content)
		}
	}
	return ""
}
