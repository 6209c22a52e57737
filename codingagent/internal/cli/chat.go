package cli

import (
	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// NewCmdChat builds `codingagent chat`.
func NewCmdChat(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Work with the agent interactively (direct mode, plan mode, todos)",
		Args:  cobra.NoArgs,
		RunE:  cmdutil.NotAvailable,
	}
	cmd.Flags().String("approval", "", "default, auto_edit or yolo")
	cmd.Flags().Bool("continue", false, "continue the latest session")
	cmd.Flags().String("resume", "", "resume session ID")
	return cmd
}
