// Package agent is the coding agent: a tool-calling loop over a workspace
// with a persisted, resumable conversation, file contents de-duplicated
// into the system prompt's focused files, a context monitor that masks old
// tool results and summarises old turns, long-term memory, an optional
// plan-then-execute mode, and sub-agents started through the task tool.
package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeagent/codeagent/codingagent/internal/session"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/tools"
)

// ChatClient is the part of the llm client the agent uses.
type ChatClient interface {
	Chat(ctx context.Context, req llm.Request, onToken func(string)) (*llm.Response, error)
}

// Options configures an Agent. Zero values take the defaults named on each field.
type Options struct {
	Client       ChatClient
	Tools        *tools.Set // the coding tools; the task tool is added unless Subagent
	Workspace    *tools.Workspace
	Model        string
	SummaryModel string // compaction and memory; default Model

	ContextWindow  int     // model's window in tokens (128000)
	ReservedOutput int     // tokens kept free for the answer (8192)
	Threshold      float64 // fraction of the effective window that triggers compaction (0.9)
	KeepMessages   int     // recent messages never summarised (10)
	MaxIterations  int     // model calls per run (100)
	// BudgetTokens stops the run, failed with Reason "budget", before a
	// model call once its tokens (prompt plus completion, sub-agents and
	// summaries included) have passed it; 0 is no limit.
	BudgetTokens int

	SystemContext string // the combined context layers (markdown)
	// RepoMap, when set, renders the repo map section of the system prompt
	// for the files in focus (they rank higher, as Aider boosts the files in
	// the chat); it is called again only when the focused set changes.
	RepoMap     func(ctx context.Context, focus []string) string
	MemoryPath  string // long-term memory file; "" = no memory
	SessionPath string // JSONL conversation log; "" = in memory only
	Events      events.Sink
	FocusCap    int  // total characters of focused files (60000)
	FocusFiles  int  // most focused files at once, the most recently touched (8)
	Stream      bool // stream tokens as events
	Subagent    bool // child agent: no task tool, no memory distillation

	// Planning offers create_plan: the model may plan a complex
	// request, whose steps then run one by one with step events.
	Planning bool
	// Approve, when set, is asked before every offered tool call except
	// create_plan; a refusal answers the call with its reason and the rest
	// of that response's calls with "not run", and the loop goes on so the
	// model can react. Sub-agents ask too.
	Approve func(ctx context.Context, call ToolRequest) Approval
}

// Configured returns the Options that come from the configuration (the
// models, the context budget, the iteration cap), so every command builds
// its agent from the same settings; the caller adds the client, the tools,
// the workspace and what is its own.
func Configured(c *config.Config) Options {
	return Options{
		Model:          c.Model,
		SummaryModel:   c.SummaryModel,
		ContextWindow:  c.ContextWindow,
		ReservedOutput: c.ReservedOutput,
		Threshold:      c.CompactionThreshold,
		KeepMessages:   c.KeepMessages,
		MaxIterations:  c.MaxIterations,
	}
}

const (
	defaultContextWindow  = 128000
	defaultReservedOutput = 8192
	defaultThreshold      = 0.9
	defaultKeepMessages   = 10
	defaultMaxIterations  = 100
	defaultFocusCap       = 60000
	defaultFocusFiles     = 8
)

func (o Options) withDefaults() Options {
	if o.ContextWindow <= 0 {
		o.ContextWindow = defaultContextWindow
	}
	if o.ReservedOutput <= 0 {
		o.ReservedOutput = defaultReservedOutput
	}
	if o.ReservedOutput >= o.ContextWindow {
		o.ReservedOutput = o.ContextWindow / 4
	}
	if o.Threshold <= 0 || o.Threshold > 1 {
		o.Threshold = defaultThreshold
	}
	if o.KeepMessages <= 0 {
		o.KeepMessages = defaultKeepMessages
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = defaultMaxIterations
	}
	if o.FocusCap <= 0 {
		o.FocusCap = defaultFocusCap
	}
	if o.FocusFiles <= 0 {
		o.FocusFiles = defaultFocusFiles
	}
	if o.SummaryModel == "" {
		o.SummaryModel = o.Model
	}
	if o.Events == nil {
		o.Events = events.Discard
	}
	return o
}

// Dependency is the result of a task this one depends on.
type Dependency struct {
	ID      string
	Summary string
}

// Task is one unit of work handed to the agent.
type Task struct {
	ID           string
	Title        string
	Description  string
	Acceptance   []string
	Resources    []string
	Hints        []string
	Dependencies []Dependency
}

// Status is how a run ended.
type Status string

// ReasonBudget is Result.Reason of a run stopped at Options.BudgetTokens.
const ReasonBudget = "budget"

// ReasonModel is Result.Reason of a run stopped by the model provider's
// error after the client's retries.
const ReasonModel = "model"

// ReasonConfig is Result.Reason of a run the server's configuration made
// impossible (a tool call left as text): no retry can succeed.
const ReasonConfig = "config"

const (
	Completed   Status = "completed"
	Failed      Status = "failed"
	Interrupted Status = "interrupted"
)

// Result is the outcome of RunTask or Send.
type Result struct {
	Status       Status
	Answer       string          // the model's final text
	Error        string          // why it failed or stopped, for the report
	Reason       string          // "budget" when it stopped at BudgetTokens, "config" when the server cannot serve it
	FilesChanged []string        // workspace-relative, sorted, unique
	Usage        llm.Usage       // every model call of the run, sub-agents and summaries included
	Subagents    []SubagentUsage // each sub-agent of the run and its part of Usage
	Iterations   int             // model calls of the loop
	Plan         *Plan           // the last valid plan create_plan made in this run, if any
	// Err is the model call's error when that is what failed the run, so
	// callers can tell a server they cannot use (llm.IsSetup) from a task
	// that went wrong; nil otherwise.
	Err error
}

// Agent runs conversations. It is not safe for concurrent use: one run at a time.
type Agent struct {
	opts  Options
	tools *tools.Set
	log   *session.Log // nil without SessionPath

	hist    history
	focus   *focusSet
	monitor monitor

	task      *Task     // the task being worked on, for sub-agents' context
	run       *runState // the run in progress
	memory    string    // long-term memory as loaded at the start of the run
	emit      func(events.Event)
	paths     map[string]string // tool path argument → workspace-relative path
	subagents int               // sub-agents started, for their ids
	turn      Turn              // the mode of the Send in progress
	planTool  planTool
	repoMap   repoMapCache
	stable    stableView // the request's frozen prefix
	// reshapeEachTurn shapes every request afresh (the behaviour before
	// the frozen prefix), for the tests and benchmarks that compare.
	reshapeEachTurn bool
}

// repoMapCache keeps the last repo map section and the focus it was made for.
type repoMapCache struct {
	key     string
	section string
	built   bool
}

// SubagentUsage is one sub-agent of a run and what its model calls used.
type SubagentUsage struct {
	ID    string // <task>.sub<n>
	Goal  string
	Usage llm.Usage
}

// runState is what one RunTask/Send accumulates.
type runState struct {
	usage     llm.Usage
	subagents []SubagentUsage
	changed   map[string]bool

	taskID    string
	started   bool     // response_start emitted
	tokens    []string // streamed before response_start, held back until the mode is known
	plan      *Plan    // the last plan accepted
	pending   *Plan    // accepted in direct mode, to be carried out
	executing bool     // a plan's steps are running
}

// New builds an agent; with SessionPath it loads the conversation there so
// a restarted agent continues where the last one stopped.
func New(opts Options) (*Agent, error) {
	if opts.Client == nil {
		return nil, errors.New("agent: no llm client given")
	}
	if opts.Workspace == nil {
		return nil, errors.New("agent: no workspace given")
	}
	if opts.Tools == nil {
		opts.Tools = tools.NewSet()
	}
	opts = opts.withDefaults()
	a := &Agent{opts: opts, focus: newFocusSet(opts.FocusCap, opts.FocusFiles), hist: newHistory()}
	a.emit = opts.Events.Emit
	a.planTool = planTool{a: a}
	a.tools = opts.Tools
	if !opts.Subagent {
		a.tools = opts.Tools.With(newTaskTool(a))
	}
	if opts.SessionPath != "" {
		if err := a.openSession(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Close closes the session log.
func (a *Agent) Close() error {
	if a.log == nil {
		return nil
	}
	return a.log.Close()
}

// Messages returns a copy of the live conversation: the task, a summary of
// what was compacted away (if anything) and every message after it, with
// tool results in full. The session file keeps everything.
func (a *Agent) Messages() []llm.Message {
	return cloneMessages(a.hist.msgs)
}

// ToolNames lists the tools offered to the model (the task tool included
// for a top-level agent).
func (a *Agent) ToolNames() []string { return a.tools.Names() }

func (a *Agent) effectiveWindow() int {
	return a.opts.ContextWindow - a.opts.ReservedOutput
}

func cloneMessages(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if m.ToolCalls != nil {
			out[i].ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...)
		}
	}
	return out
}

func (a *Agent) logEvent(format string, args ...any) {
	a.emit(events.Event{Type: events.Log, Text: fmt.Sprintf(format, args...)})
}
