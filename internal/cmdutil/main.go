package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Main runs root with signal handling set up once, prints the error (if any)
// in one place and returns the exit code.
func Main(f *Factory, root *cobra.Command, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Traces, when OTEL_EXPORTER_OTLP_ENDPOINT asks for them: flushed at
	// exit, Ctrl-C included.
	if f.Traces != nil {
		shutdown, terr := f.Traces(ctx, root.Name())
		if terr != nil {
			fmt.Fprintf(f.IO.Err, "%s: traces: %v (going on without them)\n", root.Name(), terr)
		} else {
			defer func() {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := shutdown(sctx); err != nil {
					fmt.Fprintf(f.IO.Err, "%s: traces: %v\n", root.Name(), err)
				}
			}()
		}
	}
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	started := false
	markStart(root, &started)
	err := root.ExecuteContext(ctx)
	if err != nil && !started {
		// cobra refused the command line before any command ran: an
		// unknown command or flag, wrong arguments.
		err = asUsage(err)
	}
	var ee *ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Err == nil) {
		fmt.Fprintf(f.IO.Err, "%s: %v\n", root.Name(), err)
	}
	return ExitCode(ctx, err)
}

// markStart wraps the body of every command of the tree so that Main can
// tell cobra's own errors, which come before any body runs, from a
// command's.
func markStart(c *cobra.Command, started *bool) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			*started = true
			return run(cmd, args)
		}
	} else if run := c.Run; run != nil {
		c.Run = func(cmd *cobra.Command, args []string) {
			*started = true
			run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		markStart(sub, started)
	}
}

// asUsage makes err exit 2 unless it already carries a code.
func asUsage(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return UsageError(err)
}
