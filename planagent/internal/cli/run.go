package cli

import (
	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// RunOptions are the flags of `planagent run`.
type RunOptions struct {
	Goal       string
	Runtime    string
	Parallel   int
	MaxRetries int
	Yes        bool
	JSON       bool
}

// NewCmdRun builds `planagent run`. runF replaces the run function in tests.
func NewCmdRun(f *cmdutil.Factory, runF func(*cobra.Command, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run GOAL",
		Short: "Plan GOAL and carry out every task with the coding agent",
		Long: `Plan GOAL into a task graph (the model gets read-only tools over the workspace
and must call create_plan), show the plan and ask to proceed (unless --yes or
no terminal), then dispatch the tasks to a codingagent through the volumes,
wait for their reports, decide what to do after failures and print a summary
(also written to <volumes>/reports/summary.md).`,
		Example: `  planagent run "add a /healthz endpoint with a test" --runtime local --yes
  planagent run "fix the failing tests" --workspace ~/src/myapp --parallel 2 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Goal = args[0]
			if runF != nil {
				return runF(cmd, opts)
			}
			return runRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Runtime, "runtime", "", "where the coding agent runs: docker or local (default docker)")
	fl.IntVar(&opts.Parallel, "parallel", 0, "dispatch up to N ready tasks at once (default 1)")
	fl.IntVar(&opts.MaxRetries, "max-retries", 0, "retries of a failed task (default 1, config max_retries)")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before running the plan")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	return cmd
}
