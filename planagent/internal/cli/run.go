package cli

import (
	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// RunOptions are the flags of `planagent run` that are its own; --runtime,
// --parallel and --max-retries are settings, read with the rest of the
// configuration (config.Load: flag > env > file > default).
type RunOptions struct {
	Goal     string
	PlanFile string // --plan: run this task graph instead of asking a planner
	Yes      bool
	JSON     bool
	UI       bool
	UIAddr   string
}

// NewCmdRun builds `planagent run`. runF replaces the run function in tests.
func NewCmdRun(f *cmdutil.Factory, runF func(*cobra.Command, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run GOAL | run --plan FILE [GOAL]",
		Short: "Plan GOAL (or read a plan file) and carry out every task with the coding agent",
		Long: `Plan GOAL into a task graph (the model gets read-only tools over the workspace
and must call create_plan), show the plan and ask to proceed (unless --yes or
no terminal), then dispatch the tasks to a codingagent through the volumes,
wait for their reports, decide what to do after failures and print a summary
(also written to <volumes>/reports/summary.md).

--plan FILE runs a checked-in task graph instead: YAML or JSON in the
create_plan schema (title, overview, tasks: [{id, title, description,
dependencies, acceptance}]), validated the same way, up to 10000 tasks; no
planner call is made. GOAL defaults to the plan's title. A bad file exits 2
with each problem as FILE:LINE: problem. ` + "`planagent plan GOAL --json > plan.json`" + `
writes a file it accepts.`,
		Example: `  planagent run "add a /healthz endpoint with a test" --runtime local --yes
  planagent run "fix the failing tests" --workspace ~/src/myapp --parallel 2 --json
  planagent run --plan ci/plan.yaml --runtime local --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.PlanFile != "" {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			return cmdutil.GoalArgOr("--plan FILE")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Goal = args[0]
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runRun(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.String("runtime", "", "where the coding agent runs: docker, local or kubernetes (default docker)")
	fl.String("image", "", "image of the task containers: any local image with /bin/sh (default codeagent/codingagent:latest, config image)")
	fl.Int("parallel", 0, "dispatch up to N ready tasks at once (default 1)")
	fl.Int("max-retries", 0, "retries of a failed task (default 1, config max_retries)")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before running the plan")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	fl.StringVar(&opts.PlanFile, "plan", "", "run the plan in `FILE` (YAML or JSON, create_plan schema) without calling the planner")
	addBudgetFlags(cmd)
	fl.BoolVar(&opts.UI, "ui", false, "serve the live web view of the run (see planagent ui) while it runs")
	fl.StringVar(&opts.UIAddr, "ui-addr", webui.DefaultAddr, "host:port of the web view of --ui")
	cmdutil.CompleteValues(cmd, "runtime", "docker", "local", "kubernetes")
	addKubeFlags(cmd)
	addCopyFlags(cmd)
	return cmd
}
