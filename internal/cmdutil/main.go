package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs root with signal handling set up once, prints the error (if any)
// in one place and returns the exit code.
func Main(f *Factory, root *cobra.Command, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	err := root.ExecuteContext(ctx)
	var ee *ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Err == nil) {
		fmt.Fprintf(f.IO.Err, "%s: %v\n", root.Name(), err)
	}
	return ExitCode(ctx, err)
}
