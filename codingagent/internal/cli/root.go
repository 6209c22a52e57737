// Package cli holds codingagent's cobra commands, one constructor each.
package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/relay"
	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/telemetry/export"
)

// Main runs codingagent with args and returns the exit code.
func Main(args []string) int {
	cmdutil.Harden()
	cmdutil.LimitMemory(os.Getenv)
	f := cmdutil.NewFactory()
	f.Traces = export.Setup
	// In an attempt without a network of its own (planagent's closed
	// egress) the model gateway and the egress proxy are unix sockets:
	// the relay makes them loopback ports before anything dials.
	if spec := os.Getenv(relay.Env); spec != "" {
		pairs, err := relay.Parse(spec)
		if err == nil {
			err = relay.Start(context.Background(), pairs, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "codingagent:", err)
			return 2
		}
	}
	return cmdutil.Main(f, NewCmdRoot(f), args)
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "codingagent",
		Short: "Carry out coding tasks with an LLM tool-calling loop over a workspace",
		Long: `codingagent runs an LLM tool-calling loop (read_file, write_file, edit_file,
list_dir, glob, grep, shell_exec, task) confined to a workspace, plus the
tools of the MCP servers in mcp_servers (codingagent mcp list). It carries out
one goal (exec), every command file planagent drops into the volumes (watch),
or works with a person (chat).

The model: OPENAI_API_KEY (ANTHROPIC_API_KEY with the anthropic api),
OPENAI_BASE_URL (any OpenAI-compatible server) and OPENAI_MODEL, or the same
keys in the config file; ` + "`config`" + ` shows what is in effect and where it came from.

Exit codes: 0 completed; 1 failed; 2 bad usage or configuration; 130 interrupted.`,
	}
	cmdutil.SetupRoot(root)
	cmdutil.AddConfigFlags(root)
	root.AddCommand(
		NewCmdExec(f),
		NewCmdWatch(f),
		NewCmdContext(f),
		NewCmdChat(f),
		NewCmdHealth(f),
		NewCmdProbe(f),
		NewCmdBoundary(f),
		NewCmdRelay(f),
		NewCmdRepomap(f),
		NewCmdMCP(f),
		cmdutil.NewCmdConfig(f),
		cmdutil.NewCmdVersion(f, "codingagent"),
	)
	return root
}
