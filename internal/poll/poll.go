// Package poll waits in tests for a condition that no event announces: a
// file another process writes, a container the engine removes, a port that
// starts listening. It checks the condition at a short interval until it
// holds or a deadline passes, so a test neither sleeps for a guessed time
// nor hangs; deadlines are generous because the cores are shared.
package poll

import (
	"context"
	"testing"
	"time"
)

// interval is how often a condition is checked: short against the
// deadlines (seconds), long enough not to busy the cores the awaited
// process needs.
const interval = 20 * time.Millisecond

// Until fails the test unless cond holds within the given time; what
// names the condition in the failure.
func Until(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Wait(tb.Context(), within, cond) {
		tb.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// Wait reports whether cond held before within passed or ctx ended; cond
// is checked once more at the deadline.
func Wait(ctx context.Context, within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
			if cond() {
				return true
			}
		}
	}
}
