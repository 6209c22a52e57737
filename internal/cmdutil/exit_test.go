package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"nil", t.Context(), nil, ExitOK},
		{"usage", t.Context(), UsageError(errors.New("bad flag")), ExitUsage},
		{"failed", t.Context(), Failed(errors.New("task failed")), ExitFailed},
		{"silent", t.Context(), Silent(ExitFailed), ExitFailed},
		{"wrapped exit error", t.Context(), fmt.Errorf("run: %w", Failed(errors.New("x"))), ExitFailed},
		{"cancelled", cancelled, errors.New("whatever"), ExitInterrupted},
		{"context.Canceled", t.Context(), fmt.Errorf("x: %w", context.Canceled), ExitInterrupted},
		{"unclassified error", t.Context(), errors.New("write the report: disk full"), ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.ctx, tt.err); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}
