package cli

import (
	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// NewCmdStatus builds `planagent status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*cobra.Command, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "status [RUN]",
		Short: "Print the plan summary of a run (default: the latest)",
		Long: `Print the task graph of RUN in the plan-summary format:
[X] done (with its result), [>] in progress, [ ] pending, [!] failed, [-] skipped.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run := ""
			if len(args) == 1 {
				run = args[0]
			}
			if runF != nil {
				return runF(cmd, run)
			}
			return runStatus(cmd, f, run)
		},
	}
}
