package orchestrator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// TestMain fails the package when a test leaves a goroutine running: every
// goroutine Drive starts is owned and waited for before it returns.
//
// The package's tests run in parallel (t.Parallel first): each has its own
// temporary volumes and repository and sets no working directory, no
// environment and no package variable, and most of their time is spent
// waiting on git processes and file events, so two at once shorten the
// package. A test that needs the process to itself stays sequential.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A decider still returning from a cancelled call (an HTTP client
// noticing the cancel) is waited for: when Drive returns, nothing it
// started is still running. Sequential: its goroutine check would see a
// parallel test's goroutines.
func TestDriveWaitsForTheDecider(t *testing.T) {
	before := goleak.IgnoreCurrent()
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		r := completed(c)
		r.Status, r.Error = protocol.StatusFailed, "broken"
		return r
	})
	asked := make(chan struct{})
	var returned atomic.Bool
	d := deciderFunc(func(ctx context.Context, f Failure) Verdict {
		close(asked)
		<-ctx.Done()
		// The slow return is the decider's work, not the test's
		// synchronisation: Drive must wait for it however long it takes.
		time.Sleep(300 * time.Millisecond)
		returned.Store(true)
		return Verdict{Action: "continue", Invalid: ctx.Err().Error()}
	})
	st := newTestState(t, plan.Task{ID: "bad", Description: "fails"})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	err := New(Options{Layout: l, Runtime: rt, Decider: d}).Drive(ctx, st)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Drive = %v, want context.Canceled", err)
	}
	if !returned.Load() {
		t.Fatal("Drive returned while the decider it asked was still running")
	}
	goleak.VerifyNone(t, before)
}

// An acceptance command still running when the run is interrupted is cut
// short and waited for.
func TestDriveWaitsForTheAcceptance(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, completed)
	started := make(chan struct{})
	var returned atomic.Bool
	ctx, cancel := context.WithCancel(t.Context())
	rt.execCtx = func(ectx context.Context, command string) attempt.ExecResult {
		close(started)
		<-ectx.Done()
		time.Sleep(300 * time.Millisecond) // the command's own exit, after the kill
		returned.Store(true)
		return attempt.ExecResult{ExitCode: -1, Output: "killed"}
	}
	go func() { <-started; cancel() }()
	st := newTestState(t, plan.Task{ID: "slow", Description: "slow acceptance", Acceptance: []string{"wait"}})
	err := New(Options{Layout: l, Runtime: rt}).Drive(ctx, st)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Drive = %v, want context.Canceled", err)
	}
	if !returned.Load() {
		t.Fatal("Drive returned while the acceptance command it started was still running")
	}
}
