package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/codingagent/internal/filerefs"
	"github.com/codeagent/codeagent/internal/catalog"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/probe"
)

type execOptions struct {
	goal        string
	json        bool
	contextFile string
	now         func() time.Time
}

// NewCmdExec builds `codingagent exec`.
func NewCmdExec(f *cmdutil.Factory) *cobra.Command {
	opts := &execOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "exec GOAL",
		Short: "Carry out one goal over the workspace and print a report",
		Long: `Run the coding agent on GOAL in the workspace (--workspace, else workspace_dir
from the config, else <volumes>/workspace) and print a report: status, answer,
files changed and tokens. @file:KEYWORD in GOAL attaches matching workspace files.
The system prompt carries the global and project context layers (as for
watch) and the --context-file, if given.

The conversation is kept in <volumes>/context/sessions/exec-<time>.jsonl and
long-term memory in <volumes>/context/memory.md (<volumes>: --volumes, else
./volumes; with --workspace DIR and no ./volumes, a dir per project outside
it, ~/.local/state/codeagent/workspaces/<name>-<hash> ($XDG_STATE_HOME if
set; DIR/.git/codeagent without a home): never a new dir in the project or
the current directory). Progress goes to stderr, or
with --json one JSON event per line to stdout (the report is the last event,
task_end).

Exit codes: 0 completed; 1 failed; 2 bad usage or configuration (including a
model server that cannot be reached or refuses the key, URL or model at the
first call); 130 interrupted.`,
		Example: `  codingagent exec "add a --verbose flag to cmd/main.go" --workspace ./myproject
  codingagent exec "explain @file:loop.go" --json`,
		Args: cmdutil.GoalArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.goal = args[0]
			return runExec(cmd, f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "one JSON event per line on stdout")
	cmd.Flags().StringVar(&opts.contextFile, "context-file", "", "markdown file with project context for the system prompt")
	return cmd
}

func runExec(cmd *cobra.Command, f *cmdutil.Factory, opts *execOptions) error {
	goal := strings.TrimSpace(opts.goal)
	if goal == "" {
		return cmdutil.UsageError(errors.New(`GOAL is empty: say what to do, e.g. codingagent exec "add tests for parse.go"`))
	}
	st, err := newAgentSetup(f, cmd)
	if err != nil {
		return err
	}
	defer st.close()
	cfg, layout, ws, systemContext := st.cfg, st.layout, st.ws, st.systemContext
	if opts.contextFile != "" {
		b, err := os.ReadFile(opts.contextFile)
		if err != nil {
			return cmdutil.UsageError(fmt.Errorf("--context-file: %w", err))
		}
		systemContext += "\n\n## [exec] " + filepath.Base(opts.contextFile) + " (--context-file)\n\n" + string(b)
	}

	id := "exec-" + opts.now().UTC().Format("20060102-150405.000")
	id = strings.ReplaceAll(id, ".", "-")
	var sink events.Sink = events.NewText(f.IO.Err)
	if opts.json {
		sink = events.NewJSON(f.IO.Out)
	}
	sink = events.WithTask(sink, "", id)
	for _, w := range st.warnings {
		sink.Emit(events.Event{Type: events.Log, Text: "config: " + w})
	}
	// A local server too small for the first request is refused before
	// it would cut the prompt (planagent checks once for its whole run).
	if !catalog.KnownAPI(cfg.BaseURL) && cfg.APIKey != "" {
		w := probe.Probe(cmd.Context(), probe.Options{BaseURL: cfg.BaseURL, Model: cfg.Model, APIKey: cfg.APIKey})
		if err := probe.Check(w, probe.Need{RepoMap: cfg.RepoMapTokens, ReservedOutput: cfg.ReservedOutput}); err != nil {
			return cmdutil.UsageError(err)
		}
		if w != nil && w.Loaded && w.Context < cfg.ContextWindow {
			sink.Emit(events.Event{Type: events.Log, Text: fmt.Sprintf("%s serves a %d-token context: using it as context_window (configured %d)", w.Server, w.Context, cfg.ContextWindow)})
			cfg.ContextWindow = w.Context
		}
	}
	expanded, err := filerefs.ExpandContext(cmd.Context(), ws, goal)
	if err != nil {
		return cmdutil.Failed(fmt.Errorf("expand @file references in GOAL: %w", err))
	}
	for _, w := range expanded.Warnings {
		sink.Emit(events.Event{Type: events.Log, Text: w})
	}

	st.addRepoMap([]string{goal}, func(err error) {
		sink.Emit(events.Event{Type: events.Log, Text: "repo map unavailable: " + err.Error()})
	})
	// Whole lines on stderr: the text sink would cut the stderr tail.
	warnMCP := func(line string) { fmt.Fprintln(f.IO.Err, line) }
	if opts.json {
		warnMCP = func(line string) { sink.Emit(events.Event{Type: events.Log, Text: line}) }
	}
	if err := st.addMCP(cmd.Context(), warnMCP); err != nil {
		return err
	}
	ao := agent.Configured(&cfg)
	ao.Client = f.LLMWithRetries(cfg, func(attempt int, wait time.Duration, err error) {
		sink.Emit(events.Event{Type: events.Log, Text: cmdutil.RetryText(attempt, cfg.Retries, wait, err)})
	})
	ao.Tools, ao.Workspace = st.tools, ws
	ao.SystemContext, ao.RepoMap, ao.MemoryPath = systemContext, st.repoMap, layout.Memory()
	ao.SessionPath = filepath.Join(layout.Sessions(), id+".jsonl")
	ao.Events, ao.Stream = sink, true
	a, err := agent.New(ao)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	defer a.Close()

	sink.Emit(events.Event{Type: events.TaskStart, Text: goal})
	res, err := a.RunTask(cmd.Context(), agent.Task{ID: id, Title: events.Shorten(execFirstLine(goal), 80), Description: expanded.Text})
	if err != nil {
		return cmdutil.Failed(err)
	}
	sink.Emit(events.Event{Type: events.TaskEnd, Status: string(res.Status), Text: execReportText(res),
		Usage: &events.Usage{Prompt: res.Usage.Prompt, Completion: res.Usage.Completion, Cached: res.Usage.Cached},
		Data:  map[string]any{"answer": res.Answer, "error": res.Error, "files_changed": res.FilesChanged, "iterations": res.Iterations}})
	if !opts.json {
		writeExecReport(f.IO.Out, res)
	}
	switch {
	case res.Status == agent.Completed:
		return nil
	case res.Status == agent.Interrupted:
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	case res.Reason == agent.ReasonConfig:
		// The server answered, but cannot serve this agent as set up (a
		// tool call left as text): the fix is its configuration.
		return cmdutil.Silent(cmdutil.ExitUsage)
	case llm.IsSetup(res.Err) && res.Usage == (llm.Usage{}):
		// Not one model call went through: the server is unreachable or
		// refuses this key, URL or model. That is the configuration (exit
		// 2, as the README promises), not a task that failed.
		return cmdutil.Silent(cmdutil.ExitUsage)
	default:
		return cmdutil.Silent(cmdutil.ExitFailed)
	}
}

func execReportText(res agent.Result) string {
	if res.Status == agent.Completed {
		return res.Answer
	}
	return res.Error
}

// writeExecReport prints the human report on stdout.
func writeExecReport(w io.Writer, res agent.Result) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nstatus: %s\n", res.Status)
	if res.Error != "" && res.Status != agent.Completed {
		fmt.Fprintf(&b, "error: %s\n", res.Error)
	}
	files := "(none)"
	if len(res.FilesChanged) > 0 {
		files = strings.Join(res.FilesChanged, ", ")
	}
	fmt.Fprintf(&b, "files changed: %s\n", files)
	est := ""
	if res.Usage.Estimated {
		est = " (estimated)"
	}
	fmt.Fprintf(&b, "tokens: %d prompt, %d completion%s; %d model calls\n", res.Usage.Prompt, res.Usage.Completion, est, res.Iterations)
	if a := strings.TrimSpace(res.Answer); a != "" {
		b.WriteString("\n" + a + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}

func execFirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
