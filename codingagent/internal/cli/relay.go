package cli

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/codingagent/internal/relay"
	"github.com/codeagent/codeagent/internal/cmdutil"
)

// NewCmdRelay builds `codingagent relay -- COMMAND [ARG...]`: the entrypoint
// of planagent's acceptance-command containers under closed egress. They
// have no network; Main has already started the relay from CODEAGENT_RELAY
// (the egress proxy's socket on a loopback port) before this runs, and the
// relay must outlive the command, so the command is a child, not an exec
// that would replace the relay's process.
func NewCmdRelay(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "relay -- COMMAND [ARG...]",
		Short: "Relay the egress proxy's socket to loopback while COMMAND runs; exit with its code",
		Long: `Run COMMAND with its standard streams while the ports of CODEAGENT_RELAY
("127.0.0.1:PORT=/path/to.sock", comma-separated) are relayed to their unix
sockets, and exit with COMMAND's exit code (128+N when a signal N ended it).
planagent runs acceptance commands so in a container without a network.`,
		Args:   cobra.MinimumNArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.Getenv(relay.Env) == "" {
				return cmdutil.UsageError(fmt.Errorf("relay: %s is not set, so there is nothing to relay: run COMMAND directly, or set %s=127.0.0.1:PORT=/path/to.sock", relay.Env, relay.Env))
			}
			child := exec.Command(args[0], args[1:]...)
			// The command's own streams (the process's files in a
			// container, handed over as they are): its output is what
			// planagent reports.
			child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := child.Start(); err != nil {
				return cmdutil.Failed(fmt.Errorf("relay: start %s: %w", args[0], err))
			}
			waited := make(chan error, 1)
			go func() { waited <- child.Wait() }()
			var err error
			select {
			case err = <-waited:
			case <-cmd.Context().Done():
				// SIGTERM or SIGINT to this process (the container's
				// first, which the engine signals): the command's to
				// handle as it would as PID 1's only child.
				_ = child.Process.Signal(syscall.SIGTERM)
				err = <-waited
			}
			var ee *exec.ExitError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &ee):
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return cmdutil.Silent(128 + int(ws.Signal()))
				}
				return cmdutil.Silent(ee.ExitCode())
			default:
				return cmdutil.Failed(fmt.Errorf("relay: wait for %s: %w", args[0], err))
			}
		},
	}
	// Everything after COMMAND is its own: -c of sh is no flag of ours.
	cmd.Flags().SetInterspersed(false)
	return cmd
}
