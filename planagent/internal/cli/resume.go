package cli

import (
	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// NewCmdResume builds `planagent resume`.
func NewCmdResume(f *cmdutil.Factory, runF func(*cobra.Command, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue an interrupted run (default: the latest unfinished one)",
		Long: `Continue RUN after Ctrl-C, kill -9 or a crash: completed tasks are not redone,
reports that arrived while planagent was down are read, and the remaining
tasks are dispatched. A failed run continues with --retry-failed: its failed
tasks, and the tasks skipped because of them, are tried again. A finished
run with review comments (planagent comment) continues with their follow-up
tasks. The run keeps the runtime, image, workspace, parallelism, retry
limit and task timeout it was started with; --runtime, --image, --workspace,
--parallel and --max-retries override them.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			run := ""
			if len(args) == 1 {
				run = args[0]
			}
			if runF != nil {
				return runF(cmd, run)
			}
			return runResume(cmd, f, run)
		},
	}
	fl := cmd.Flags()
	fl.Bool("json", false, "one JSON event per line on stdout")
	fl.Bool("retry-failed", false, "give a failed run's failed tasks (and those skipped because of them) another try, with their retries anew")
	addBudgetFlags(cmd)
	fl.Bool("ui", false, "serve the live web view of the run (see planagent ui) while it runs")
	fl.String("ui-addr", webui.DefaultAddr, "host:port of the web view of --ui")
	// Without these flags the run keeps what it was started with (saved in
	// its state), including --workspace; given, they override it.
	fl.String("runtime", "", "where the coding agent runs: docker, local or kubernetes (default: as the run was started)")
	fl.String("image", "", "image of the task containers: any local image with /bin/sh (default: config image)")
	fl.Int("parallel", 0, "dispatch up to N ready tasks at once (default: as the run was started)")
	fl.Int("max-retries", 0, "retries of a failed task (default: as the run was started)")
	cmdutil.CompleteValues(cmd, "runtime", "docker", "local", "kubernetes")
	addKubeFlags(cmd)
	addCopyFlags(cmd)
	return cmd
}
