package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/mcp"
	"github.com/codeagent/codeagent/internal/toolset"
	"github.com/codeagent/codeagent/internal/volume"
)

// NewCmdMCP builds `codingagent mcp`.
func NewCmdMCP(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Inspect the MCP servers of mcp_servers",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "Start every configured MCP server and list whether it started and its tools",
		Long: `Start every server of mcp_servers (on this machine, in the workspace as for
exec and chat), print whether it started (or the one line saying why not,
with its stderr tail) and the tools the model is offered, marked
[read-only] when plan mode and the planner may use them; then stop them.

Exit codes: 0 every server started; 1 some server did not start; 2 bad
configuration (including tool names that collide).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMCPList(cmd, f) },
	})
	return cmd
}

func runMCPList(cmd *cobra.Command, f *cmdutil.Factory) error {
	l, err := f.Config(cmd)
	if err != nil {
		return err
	}
	if len(l.MCPServers) == 0 {
		where := "the config file"
		if l.File != "" {
			where = l.File
		}
		_, err := fmt.Fprintf(f.IO.Out, "no MCP servers configured: add mcp_servers to %s (see docs/mcp.md)\n", where)
		return err
	}
	// The servers start where exec would start them: in the workspace.
	dir := ""
	if layout, err := volume.New(l.VolumesDir, l.WorkspaceDir); err == nil {
		if fi, err := os.Stat(layout.Workspace()); err == nil && fi.IsDir() {
			dir = layout.Workspace()
		}
	}
	m := toolset.Servers(l.Config, dir, f.Getenv)
	defer func() { _ = m.Close() }()
	st := m.Start(cmd.Context())
	writeMCPStatus(f.IO.Out, st)
	switch {
	case st.Err != nil:
		return cmdutil.UsageError(st.Err)
	case len(st.Failures()) > 0:
		return cmdutil.Silent(cmdutil.ExitFailed)
	}
	return nil
}

func writeMCPStatus(w io.Writer, st *mcp.Status) {
	var b strings.Builder
	for i, s := range st.Servers {
		if i > 0 {
			b.WriteString("\n")
		}
		if !s.Started {
			fmt.Fprintf(&b, "%s (%s): not started: %s\n", s.Name, s.Transport, s.Err)
			continue
		}
		fmt.Fprintf(&b, "%s (%s): started, %d tools\n", s.Name, s.Transport, len(s.Tools))
		for _, t := range s.Tools {
			ro := ""
			if t.ReadOnly {
				ro = " [read-only]"
			}
			desc := strings.TrimSpace(strings.SplitN(t.Description, "\n", 2)[0])
			fmt.Fprintf(&b, "  %s%s  %s\n", t.Name, ro, desc)
		}
	}
	for _, warn := range st.Warnings {
		fmt.Fprintf(&b, "\nwarning: %s\n", warn)
	}
	if st.Err != nil {
		fmt.Fprintf(&b, "\nerror: %v\n", st.Err)
	}
	_, _ = io.WriteString(w, b.String())
}
