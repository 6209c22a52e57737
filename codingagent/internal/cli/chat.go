package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/codingagent/internal/chat"
	"github.com/codeagent/codeagent/internal/cmdutil"
)

type chatOptions struct {
	approval string
	cont     bool
	resume   string
	now      func() time.Time
}

// NewCmdChat builds `codingagent chat`.
func NewCmdChat(f *cmdutil.Factory) *cobra.Command {
	opts := &chatOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Work with the agent interactively (direct mode, plan mode, todos)",
		Long: `Talk to the coding agent about the workspace (--workspace, else workspace_dir
from the config, else <volumes>/workspace). Each input runs the tool loop; the
model may make a plan for a complex request and carry it out step by step.
In plan mode (/mode plan, or Ctrl-P) only read-only tools and
create_plan are offered; /plan to-todos and /todos execute-all carry the plan
out. /help lists every command.

Approval (--approval): default asks before write_file, edit_file,
shell_exec and MCP tools their server does not mark read-only (yes / no /
always); auto_edit allows edits and asks for shell and those MCP tools;
yolo allows everything. Without a terminal on stdin and without --approval,
those calls are refused and the model is told how to allow them;
--approval default with a pipe reads the answers from stdin.

The conversation, plan and todos are kept in
<volumes>/context/sessions/chat-<id>.jsonl (and .state.json); --continue
resumes the latest session, --resume ID a given one. Long-term memory
(<volumes>/context/memory.md) is updated when a session ends.
Ctrl-C cancels the running answer; Ctrl-C twice at the prompt, Ctrl-D or
/exit leaves. On a terminal the input line can be edited (arrows, Home/End,
Ctrl-A/E/K/U/W), Up/Down walk the history of inputs in this workspace
(<volumes>/context/sessions/.chat-history-<hash>), Ctrl-R searches it
(type to narrow, Ctrl-R again for older, Enter takes it, Ctrl-G leaves), and
Ctrl-P toggles plan mode at once; --continue comes back in the session's mode.`,
		Example: `  codingagent chat --workspace ./myproject
  codingagent chat --continue --approval auto_edit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runChat(cmd, f, opts) },
	}
	cmd.Flags().StringVar(&opts.approval, "approval", "", "default, auto_edit or yolo")
	cmdutil.CompleteValues(cmd, "approval", "default", "auto_edit", "yolo")
	cmd.Flags().BoolVar(&opts.cont, "continue", false, "continue the latest session")
	cmd.Flags().StringVar(&opts.resume, "resume", "", "resume session ID")
	return cmd
}

func runChat(cmd *cobra.Command, f *cmdutil.Factory, opts *chatOptions) error {
	var approval chat.ApprovalMode
	if opts.approval != "" {
		m, err := chat.ParseApprovalMode(opts.approval)
		if err != nil {
			return cmdutil.UsageError(fmt.Errorf("--approval: %w", err))
		}
		approval = m
	}
	st, err := newAgentSetup(f, cmd)
	if err != nil {
		return err
	}
	defer st.close()
	cfg, layout, ws, systemContext := st.cfg, st.layout, st.ws, st.systemContext
	id, _, err := chat.ResolveSession(layout.Sessions(), opts.cont, opts.resume, opts.now())
	if err != nil {
		return cmdutil.UsageError(err)
	}
	for _, w := range st.warnings {
		fmt.Fprintf(f.IO.Err, "config: %s\n", w)
	}

	// Ctrl-C belongs to the chat: it cancels a turn, not the session. The
	// root context (cancelled by the first SIGINT) is set aside; SIGTERM
	// still ends the chat.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	ctx, stop := signal.NotifyContext(context.WithoutCancel(cmd.Context()), syscall.SIGTERM)
	defer stop()

	// As in exec and watch: the repo map (repo_map_tokens: 0 turns it off)
	// is in the system prompt and offered as a read-only tool, so plan mode has it.
	st.addRepoMap(nil, func(err error) { fmt.Fprintf(f.IO.Err, "repo map unavailable: %v\n", err) })
	if err := st.addMCP(ctx, func(line string) { fmt.Fprintln(f.IO.Err, line) }); err != nil {
		return err
	}

	interactive := f.IO.IsTerminal != nil && f.IO.IsTerminal()
	ao := agent.Configured(&cfg)
	ao.Client = f.LLMWithRetries(cfg, func(attempt int, wait time.Duration, err error) {
		fmt.Fprintln(f.IO.Err, cmdutil.RetryText(attempt, cfg.Retries, wait, err))
	})
	ao.Tools, ao.Workspace = st.tools, ws
	ao.SystemContext, ao.RepoMap, ao.MemoryPath = systemContext, st.repoMap, layout.Memory()
	ao.Stream = true
	// Line editing needs the terminal itself on both sides.
	var terminal *os.File
	if in, ok := f.IO.In.(*os.File); ok && interactive {
		if out, ok := f.IO.Out.(*os.File); ok && cmdutil.IsTerminal(in) && cmdutil.IsTerminal(out) {
			terminal = in
		}
	}
	err = chat.Run(ctx, chat.Options{
		Agent:       ao,
		SessionsDir: layout.Sessions(),
		SessionID:   id,
		In:          f.IO.In,
		Out:         f.IO.Out,
		Interactive: interactive,
		Terminal:    terminal,
		HistoryFile: chat.HistoryFile(layout.Sessions(), ws.Root()),
		Approval:    approval,
		Interrupt:   interrupts,
	})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	return nil
}
