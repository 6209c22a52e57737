// Package cmdutil holds what both programs' command lines share: the exit-code
// contract, the streams, the factory of lazily built clients and the
// `version` and `config` commands (the pattern of cli/cli's pkg/cmdutil).
package cmdutil

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes: the contract both programs document in their help.
const (
	ExitOK          = 0
	ExitFailed      = 1   // a task failed or was skipped
	ExitUsage       = 2   // bad usage or configuration
	ExitPaused      = 3   // a budget was reached; `planagent resume` continues
	ExitInterrupted = 130 // Ctrl-C / SIGTERM
)

// ExitError carries an exit code up to main.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError wraps err so that it exits 2.
func UsageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Failed wraps err so that it exits 1.
func Failed(err error) error { return &ExitError{Code: ExitFailed, Err: err} }

// Silent exits with code without printing anything more (the command already reported).
func Silent(code int) error { return &ExitError{Code: code} }

// ExitCode maps an error returned by a command to the process exit code.
// Cancellation wins: an interrupted run is 130 whatever error it produced.
func ExitCode(ctx context.Context, err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return ExitInterrupted
	}
	// Bad usage and configuration are UsageErrors (Main makes cobra's own
	// errors so); anything else went wrong while doing the work.
	return ExitFailed
}
