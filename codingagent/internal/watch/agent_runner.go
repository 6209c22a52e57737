package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/repomap"
	"github.com/codeagent/codeagent/internal/tools"
	"github.com/codeagent/codeagent/internal/volume"
)

// AgentConfig is what AgentRunner needs to build an agent per command.
// Zero values take the agent's defaults.
type AgentConfig struct {
	Client         agent.ChatClient // the llm client (*llm.Client)
	Layout         volume.Layout    // workspace, sessions dir and memory file
	Model          string
	SummaryModel   string
	ContextWindow  int
	ReservedOutput int
	Threshold      float64
	KeepMessages   int
	MaxIterations  int
	Tools          tools.Options
	Stream         bool // token events in the events file
	RepoMapTokens  int  // repo map budget in the system prompt; 0 = no map and no repo_map tool
}

// AgentRunner is the real TaskRunner: one coding agent per command over the
// layout's workspace, its conversation kept in a session file per run and
// task so that a later attempt continues it.
type AgentRunner struct {
	cfg AgentConfig
}

// NewAgentRunner returns a runner; it fails when no LLM client is given.
func NewAgentRunner(cfg AgentConfig) (*AgentRunner, error) {
	if cfg.Client == nil {
		return nil, errors.New("watch: AgentConfig.Client is required")
	}
	return &AgentRunner{cfg: cfg}, nil
}

// SessionPath is where the conversation of cmd's task in cmd's run is kept.
func SessionPath(l volume.Layout, cmd *protocol.Command) string {
	return filepath.Join(l.Sessions(), cmd.RunID+"--"+cmd.ID+".jsonl")
}

// Run carries cmd out. RunTask starts the task, or resumes it when the
// session holds an unfinished conversation of it (the watcher running an
// earlier attempt died). When an earlier attempt finished and planagent
// dispatched the task again, a follow-up message with the command's hints
// continues that conversation instead, so the agent knows what it already
// did rather than redoing it blindly or replaying the old answer.
func (r *AgentRunner) Run(ctx context.Context, cmd *protocol.Command, systemContext string, ev events.Sink) (*protocol.Report, error) {
	ws, err := tools.NewWorkspace(r.cfg.Layout.Workspace())
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", r.cfg.Layout.Workspace(), err)
	}
	set := tools.Coding(ws, r.cfg.Tools)
	var repoMap func([]string) string
	if r.cfg.RepoMapTokens > 0 {
		cache := r.cfg.Layout.RepoMapCache()
		set = set.With(tools.NewRepoMap(ws, cache))
		boost := append([]string{cmd.Title, cmd.Body}, cmd.Resources...)
		repoMap = repomap.Prompter(repomap.Options{Root: ws.Root(), CacheDir: cache, Tokens: r.cfg.RepoMapTokens, Boost: boost},
			func(err error) { ev.Emit(events.Event{Type: events.Log, Text: "repo map unavailable: " + err.Error()}) })
	}
	a, err := agent.New(agent.Options{
		Client:         r.cfg.Client,
		Tools:          set,
		Workspace:      ws,
		Model:          r.cfg.Model,
		SummaryModel:   r.cfg.SummaryModel,
		ContextWindow:  r.cfg.ContextWindow,
		ReservedOutput: r.cfg.ReservedOutput,
		Threshold:      r.cfg.Threshold,
		KeepMessages:   r.cfg.KeepMessages,
		MaxIterations:  r.cfg.MaxIterations,
		SystemContext:  systemContext,
		RepoMap:        repoMap,
		MemoryPath:     r.cfg.Layout.Memory(),
		SessionPath:    SessionPath(r.cfg.Layout, cmd),
		Events:         ev,
		Stream:         r.cfg.Stream,
	})
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
		FilesChanged: res.FilesChanged,
		Tokens:       protocol.Tokens{Prompt: res.Usage.Prompt, Completion: res.Usage.Completion},
	}
	if err != nil {
		return rep, fmt.Errorf("task %s: %w", cmd.ID, err)
	}
	return rep, nil
}

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
	return m.Role == openai.ChatMessageRoleAssistant && len(m.ToolCalls) == 0
}
