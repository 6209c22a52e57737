package cli

import (
	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// NewCmdResume builds `planagent resume`.
func NewCmdResume(f *cmdutil.Factory, runF func(*cobra.Command, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue an interrupted run (default: the latest unfinished one)",
		Long: `Continue RUN after Ctrl-C, kill -9 or a crash: completed tasks are not redone,
reports that arrived while planagent was down are read, and the remaining
tasks are dispatched.`,
		Args: cobra.MaximumNArgs(1),
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
	cmd.Flags().Bool("json", false, "one JSON event per line on stdout")
	return cmd
}
