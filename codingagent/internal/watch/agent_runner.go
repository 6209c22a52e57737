package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/mcp"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/telemetry"
	"github.com/codeagent/codeagent/internal/tools"
	"github.com/codeagent/codeagent/internal/toolset"
	"github.com/codeagent/codeagent/internal/volume"
)

// AgentConfig is what AgentRunner needs to build an agent per command.
// Zero values take the agent's defaults.
type AgentConfig struct {
	Client agent.ChatClient // the llm client (*llmclient.Client)
	Layout volume.Layout    // workspace, sessions dir and memory file
	// Agent are the configured agent settings (agent.Configured); the
	// runner adds the client, tools, workspace and session of each task.
	Agent agent.Options
	Tools tools.Options
	// EgressProxy is the egress proxy of planagent's local runtime
	// (config.EgressProxyEnv); each task's commands get it under the
	// attempt's name. "" leaves the proxy settings as they are.
	EgressProxy   string
	Stream        bool // token events in the events file
	RepoMapTokens int  // repo map budget in the system prompt; 0 = no map and no repo_map tool
	// MCP are the MCP servers, started at the first task and shared by all
	// of this process's tasks; nil or empty means none.
	MCP *mcp.Manager
	// Warn gets, once per process, each line about an MCP server that did
	// not start, for the watcher's log (planagent shows its warnings);
	// every task's events get them too.
	Warn func(line string)
	// Exclude names dirs of the workspace (relative to it) that are not
	// part of it: planagent's volumes when they lie inside the workspace.
	Exclude []string
}

// AgentRunner is the real TaskRunner: one coding agent per command over the
// command's workspace (its attempt's copy, else the layout's workspace), its conversation kept in a session file per run and
// task so that a later attempt continues it.
type AgentRunner struct {
	cfg      AgentConfig
	warnOnce sync.Once
}

// NewAgentRunner returns a runner; it fails when no LLM client is given.
func NewAgentRunner(cfg AgentConfig) (*AgentRunner, error) {
	if cfg.Client == nil {
		return nil, errors.New("watch: AgentConfig.Client is required")
	}
	return &AgentRunner{cfg: cfg}, nil
}

// SessionPath is where the conversation of cmd's task in cmd's run is kept.
// An attempt that works in its own copy of the workspace has its own: a
// later attempt starts from a fresh copy, so continuing a conversation
// about files that are gone would mislead the model (what went wrong
// reaches it through the command's hints and the task context instead);
// a watcher retaking the command of a dead one works in the same copy and
// resumes it.
func SessionPath(l volume.Layout, cmd *protocol.Command) string {
	return l.SessionFile(cmd.RunID, cmd.ID, cmd.Workspace)
}

// Run carries cmd out. RunTask starts the task, or resumes it when the
// session holds an unfinished conversation of it (the watcher running an
// earlier attempt died). When an earlier attempt finished and planagent
// dispatched the task again, a follow-up message with the command's hints
// continues that conversation instead, so the agent knows what it already
// did rather than redoing it blindly or replaying the old answer.
func (r *AgentRunner) Run(ctx context.Context, cmd *protocol.Command, systemContext string, ev events.Sink) (*protocol.Report, error) {
	// The task's LLM and tool spans join the run's trace under planagent's
	// span of this attempt, each with the task id.
	ctx = telemetry.WithTask(telemetry.WithTraceParent(ctx, cmd.TraceParent), cmd.ID)
	root, err := ResolveWorkspace(r.cfg.Layout, cmd.Workspace)
	if err != nil {
		return nil, err
	}
	ws, err := tools.NewWorkspace(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	ws.Exclude(r.cfg.Exclude...)
	shell, err := r.shellOptions(cmd)
	if err != nil {
		return nil, err
	}
	if cmd.Setup != "" {
		if rep, err := r.setup(ctx, cmd, ws, shell, ev); rep != nil || err != nil {
			return rep, err
		}
	}
	o := toolset.Options{Workspace: ws, Shell: shell, RepoMapTokens: r.cfg.RepoMapTokens, RepoMapCache: r.cfg.Layout.RepoMapCache()}
	if cmd.Workspace != "" {
		o.RepoMapKey = toolset.AttemptsRepoMapKey
	}
	set := toolset.New(o)
	var repoMap func(context.Context, []string) string
	if r.cfg.RepoMapTokens > 0 {
		boost := append([]string{cmd.Title, cmd.Body}, cmd.Resources...)
		repoMap = repomap.Prompter(o.Map(boost),
			func(err error) { ev.Emit(events.Event{Type: events.Log, Text: "repo map unavailable: " + err.Error()}) })
	}
	// A task's cancellation must not leave the servers of the later tasks
	// half-started; the manager's own timeout bounds the start.
	var lines []string
	set, err = toolset.WithMCP(context.WithoutCancel(ctx), set, r.cfg.MCP, false, func(line string) {
		ev.Emit(events.Event{Type: events.Log, Text: line})
		lines = append(lines, line)
	})
	if r.cfg.Warn != nil && !r.cfg.MCP.Empty() {
		r.warnOnce.Do(func() {
			for _, line := range lines {
				r.cfg.Warn(line)
			}
		})
	}
	if err != nil {
		return nil, err
	}
	ao := r.cfg.Agent
	ao.Client, ao.Tools, ao.Workspace = r.cfg.Client, set, ws
	ao.SystemContext, ao.RepoMap, ao.MemoryPath = systemContext, repoMap, r.cfg.Layout.Memory()
	ao.SessionPath, ao.Events, ao.Stream = SessionPath(r.cfg.Layout, cmd), ev, r.cfg.Stream
	ao.BudgetTokens = cmd.BudgetTokens
	a, err := agent.New(ao)
	if err != nil {
		return nil, fmt.Errorf("start the agent for task %s: %w", cmd.ID, err)
	}
	defer a.Close()

	var res agent.Result
	if cmd.Attempt > 1 && endsWithAnswer(a.Messages()) {
		res, err = a.Send(ctx, retryMessage(cmd))
	} else {
		res, err = a.RunTask(ctx, taskOf(cmd))
	}
	rep := &protocol.Report{
		Status:       protocol.Status(res.Status),
		Body:         res.Answer,
		Error:        res.Error,
		Reason:       res.Reason,
		FilesChanged: res.FilesChanged,
		Tokens:       tokensOf(res.Usage),
	}
	for _, s := range res.Subagents {
		rep.Subagents = append(rep.Subagents, protocol.Subagent{ID: s.ID, Goal: s.Goal, Tokens: tokensOf(s.Usage)})
	}
	if err != nil {
		return rep, fmt.Errorf("task %s: %w", cmd.ID, err)
	}
	if res.Err != nil && rep.Status == protocol.StatusFailed {
		return rep, &modelFailure{err: res.Err}
	}
	return rep, nil
}

// shellOptions are the tools' options for cmd's commands: with the local
// runtime's egress proxy under the attempt's name, so that the proxy,
// which every attempt of this watcher shares, knows whose request it
// refused.
func (r *AgentRunner) shellOptions(cmd *protocol.Command) (tools.Options, error) {
	o := r.cfg.Tools
	if r.cfg.EgressProxy == "" {
		return o, nil
	}
	env, err := config.AttemptProxyEnv(r.cfg.EgressProxy, cmd.ID, cmd.Attempt)
	if err != nil {
		return o, err
	}
	o.Env = append(slices.Clone(o.Env), env...)
	return o, nil
}

// modelFailure goes with a failed report whose cause was a model call:
// the report says it all; the watcher only looks at the cause.
type modelFailure struct{ err error }

func (m *modelFailure) Error() string { return m.err.Error() }
func (m *modelFailure) Unwrap() error { return m.err }

func taskOf(cmd *protocol.Command) agent.Task {
	deps := make([]agent.Dependency, len(cmd.Dependencies))
	for i, d := range cmd.Dependencies {
		deps[i] = agent.Dependency{ID: d.ID, Summary: d.Summary}
	}
	return agent.Task{ID: cmd.ID, Title: cmd.Title, Description: cmd.Body, Acceptance: cmd.Acceptance,
		Resources: cmd.Resources, Hints: cmd.Hints, Dependencies: deps}
}

// retryMessage asks for another go at a task whose earlier attempt is in
// the conversation above.
func retryMessage(cmd *protocol.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This is attempt %d of task %s (%s): the planner dispatched it again after the attempt above. "+
		"Check the workspace for what is already done, finish what is missing, "+
		"and end with a short summary of the result.\n", cmd.Attempt, cmd.ID, cmd.Title)
	list := func(heading string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n" + heading + ":\n")
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	list("Hints", cmd.Hints)
	list("Acceptance criteria", cmd.Acceptance)
	return b.String()
}

// endsWithAnswer reports whether a conversation ended with the model's
// final answer (an assistant message without tool calls).
func endsWithAnswer(msgs []llm.Message) bool {
	if len(msgs) == 0 {
		return false
	}
	m := msgs[len(msgs)-1]
	return m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0
}

func tokensOf(u llm.Usage) protocol.Tokens {
	return protocol.Tokens{Prompt: u.Prompt, Completion: u.Completion, Cached: u.Cached, CacheWrite: u.CacheWrite, CostUSD: u.CostUSD}
}

// setupTimeout bounds a setup command when the command file gives no
// task timeout.
const setupTimeout = 30 * time.Minute

// setup runs the command's setup in the workspace before the agent
// starts, its output in the task's events (the task's log). A report comes
// back only when it failed: the attempt failed, with the setup's tail.
func (r *AgentRunner) setup(ctx context.Context, cmd *protocol.Command, ws *tools.Workspace, shell tools.Options, ev events.Sink) (*protocol.Report, error) {
	timeout := time.Duration(cmd.Timeout)
	if timeout <= 0 {
		timeout = setupTimeout
	}
	ev.Emit(events.Event{Type: events.Log, Text: "setup: $ " + cmd.Setup})
	start := time.Now()
	res, err := tools.Shell(ctx, ws, shell, cmd.Setup, timeout)
	if res.Output != "" {
		ev.Emit(events.Event{Type: events.Log, Text: "setup: " + res.Output})
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: setup command: %w", cmd.ID, err)
	}
	status := res.Status
	if res.TimedOut {
		status = "timed out after " + timeout.String()
	}
	ev.Emit(events.Event{Type: events.Log, Text: fmt.Sprintf("setup: %s in %s", status, time.Since(start).Round(time.Millisecond))})
	if !res.TimedOut && res.ExitCode == 0 {
		return nil, nil
	}
	msg := fmt.Sprintf("setup command %q failed (%s)", cmd.Setup, status)
	if t := setupTail(res.Output); t != "" {
		msg += ": " + t
	}
	return &protocol.Report{Status: protocol.StatusFailed, Error: msg, Reason: protocol.ReasonSetup,
		Body: "The setup command failed before the agent started:\n\n```\n" + res.Output + "\n```\n"}, nil
}

// setupTail is the end of a failed setup's output, where the cause is.
func setupTail(out string) string {
	out = strings.TrimSpace(out)
	const keep = 1000
	if len(out) > keep {
		out = "…" + out[len(out)-keep:]
	}
	return out
}
