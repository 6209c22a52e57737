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
		{"failed", context.Background(), Failed(errors.New("task failed")), ExitFailed},
		{"silent", context.Background(), Silent(ExitFailed), ExitFailed},
		{"wrapped exit error", context.Background(), fmt.Errorf("run: %w", Failed(errors.New("x"))), ExitFailed},
		{"cancelled", cancelled, errors.New("whatever"), ExitInterrupted},
		{"context.Canceled", context.Background(), fmt.Errorf("x: %w", context.Canceled), ExitInterrupted},
		{"unclassified error", context.Background(), errors.New("write the report: disk full"), ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.ctx, tt.err); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}
