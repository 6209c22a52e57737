// Package cli holds planagent's cobra commands: one file per command with
// its constructor (NewCmdX), options and run function (runX), as the GitHub
// CLI lays them out; what several commands share is in files named for
// what it holds (session: wiring.go, the planner: planner.go, driving a run:
// drive.go, budgets: budget.go, checkpoints: checkpoints.go, reading a run:
// view.go, review comments as follow-up tasks: followups.go).
package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/telemetry/export"
)

// Main runs planagent with args and returns the exit code.
func Main(args []string) int {
	cmdutil.Harden()
	cmdutil.LimitMemory(os.Getenv)
	f := cmdutil.NewFactory()
	f.Traces = export.Setup
	return cmdutil.Main(f, NewCmdRoot(f), args)
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "planagent",
		Short: "Plan a goal into tasks and drive a coding agent through them",
		Long: `planagent turns a goal into a graph of tasks with an LLM, writes each task and
its context into the shared volumes tree, runs a codingagent (in a Docker
container or as a local process) over them and reports the outcome.

The model: OPENAI_API_KEY (ANTHROPIC_API_KEY with the anthropic api),
OPENAI_BASE_URL (any OpenAI-compatible server) and OPENAI_MODEL, or the same
keys in the config file; ` + "`config`" + ` shows what is in effect and where it came from.

Exit codes: 0 every task completed; 1 a task failed or was skipped, or
another failure; 2 bad usage or configuration; 3 paused at a budget (resume continues);
130 interrupted.`,
	}
	cmdutil.SetupRoot(root)
	cmdutil.AddConfigFlags(root)
	root.PersistentFlags().BoolP("verbose", "v", false, "log more: planagent's info lines and every log line of the coding agent")
	root.AddCommand(
		NewCmdRun(f, nil),
		NewCmdPlan(f, nil),
		NewCmdStatus(f, nil),
		NewCmdResume(f, nil),
		NewCmdRuns(f, nil),
		NewCmdGraph(f, nil),
		NewCmdDiff(f, nil),
		NewCmdRollback(f, nil),
		NewCmdPick(f, nil),
		NewCmdPublish(f, nil),
		NewCmdComment(f, nil),
		NewCmdReview(f, nil),
		NewCmdUI(f, nil),
		NewCmdGateway(f),
		cmdutil.NewCmdConfig(f),
		cmdutil.NewCmdVersion(f, "planagent"),
	)
	return root
}
