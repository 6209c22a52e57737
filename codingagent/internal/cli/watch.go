package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/codingagent/internal/watch"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/toolset"
	"github.com/codeagent/codeagent/internal/volume"
)

type watchOptions struct {
	concurrency int
	poll        time.Duration
	task        string
}

// NewCmdWatch builds `codingagent watch`.
func NewCmdWatch(f *cmdutil.Factory) *cobra.Command {
	opts := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Carry out every command file dropped into <volumes>/commands and write reports",
		Long: `Watch <volumes>/commands/ (fsnotify, plus a scan at start), claim each command
atomically, combine the context layers, run the agent in the workspace and
write <volumes>/reports/<task-id>.md. A heartbeat under
<volumes>/reports/.watchers/ tells planagent the watcher is alive.

On SIGTERM or Ctrl-C it stops claiming, gives running tasks 10s to finish,
then interrupts them (their reports say "interrupted") and exits 0.

With --task ID it carries out only the command of task ID (waiting briefly
for it), in the workspace the command names, and exits once its report is
written: 0 whatever the task's status, 1 when no report could be written.
The docker runtime runs it so in a container per attempt.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWatch(cmd, f, opts) },
	}
	cmd.Flags().IntVar(&opts.concurrency, "concurrency", 1, "tasks run at once (default: the parallel setting, CODEAGENT_PARALLEL)")
	cmd.Flags().DurationVar(&opts.poll, "poll", 0, "poll the commands dir at this interval instead of fsnotify (auto when events are not delivered)")
	cmd.Flags().StringVar(&opts.task, "task", "", "carry out only the command of this task id, then exit")
	return cmd
}

func runWatch(cmd *cobra.Command, f *cmdutil.Factory, opts *watchOptions) error {
	// When the planagent that started this watcher dies, its end of our
	// stdout/stderr pipe closes; a log line must not kill us with SIGPIPE in
	// the middle of a task — the task finishes (or is reported interrupted)
	// and the report is there for `planagent resume`.
	signal.Ignore(syscall.SIGPIPE)
	if opts.concurrency < 1 {
		return cmdutil.UsageError(fmt.Errorf("--concurrency %d: must be at least 1", opts.concurrency))
	}
	if opts.poll < 0 {
		return cmdutil.UsageError(fmt.Errorf("--poll %s: must not be negative (0 = fsnotify)", opts.poll))
	}
	l, err := f.Config(cmd)
	if err != nil {
		return err
	}
	cfg := l.Config
	// planagent --parallel N reaches its watcher as CODEAGENT_PARALLEL.
	concurrency := opts.concurrency
	if !cmd.Flags().Changed("concurrency") && cfg.Parallel > 1 {
		concurrency = cfg.Parallel
	}
	if cfg.APIKey == "" {
		return cmdutil.UsageError(errors.New("no API key: set OPENAI_API_KEY (or api_key in the config file); a server that needs none accepts any value"))
	}
	layout, err := volume.New(cfg.VolumesDir, cfg.WorkspaceDir)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if opts.task != "" {
		// A container per attempt mounts only some of the volumes, under
		// a root it cannot write: what the task needs is there.
		if err := protocol.ValidateID(opts.task); err != nil {
			return cmdutil.UsageError(fmt.Errorf("--task: %w", err))
		}
	} else if err := layout.Ensure(); err != nil {
		return cmdutil.UsageError(fmt.Errorf("%w: check --volumes %s", err, layout.Root))
	}
	logger := newLogger(f.IO.Err)
	for _, w := range l.Warnings {
		logger.Warn(w)
	}
	// In the docker runtime this is the task's container: the stdio servers
	// run here, next to the workspace.
	servers := toolset.Servers(cfg, layout.Workspace(), f.Getenv)
	defer func() { _ = servers.Close() }()
	runner, err := watch.NewAgentRunner(watch.AgentConfig{
		Client: f.LLMWithRetries(cfg, func(attempt int, wait time.Duration, err error) {
			logger.Warn(cmdutil.RetryText(attempt, cfg.Retries, wait, err))
		}),
		Layout:        layout,
		Agent:         agent.Configured(&cfg),
		RepoMapTokens: cfg.RepoMapTokens,
		Tools:         shellOptions(cfg, servers),
		EgressProxy:   f.Getenv(config.EgressProxyEnv),
		MCP:           servers,
		Warn:          func(line string) { logger.Warn(line) },
		Exclude:       workspaceExclude(f, layout),
	})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	err = watch.Run(cmd.Context(), watch.Options{
		Layout:      layout,
		Concurrency: concurrency,
		Poll:        opts.poll,
		Runner:      runner,
		Logger:      logger,
		TaskTimeout: cfg.TaskTimeout,
		Task:        opts.task,
	})
	if err != nil {
		return cmdutil.Failed(err)
	}
	return nil
}

// newLogger logs JSON when w is not a terminal (in the container, where
// `docker logs` collects it) and text for a person otherwise.
func newLogger(w io.Writer) *slog.Logger {
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && cmdutil.IsTerminal(f)
}
