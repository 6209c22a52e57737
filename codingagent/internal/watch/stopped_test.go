package watch

import (
	"context"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
)

// unreachableRunner fails its task on a model call that could not connect,
// as when planagent (and the model gateway in it) dies; with stop it first
// asks the watcher to stop, as planagent's death signal does.
type unreachableRunner struct{ stop func() }

func (r unreachableRunner) Run(ctx context.Context, cmd *protocol.Command, _ string, _ events.Sink) (*protocol.Report, error) {
	cause := &llm.Error{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Message: "EOF"}
	if r.stop != nil {
		go func() { time.Sleep(50 * time.Millisecond); r.stop() }() // the signal comes a moment after the closed connection
	}
	return &protocol.Report{Status: protocol.StatusFailed, Error: cause.Error()}, &modelFailure{err: cause}
}

// A task whose model became unreachable as its watcher was being stopped
// is interrupted (dispatched again on resume), not failed; one whose
// watcher goes on is failed, with the model's error.
func TestModelUnreachableWhileStoppingIsInterrupted(t *testing.T) {
	t.Parallel() // own layout, server and watcher; most of it is waiting
	for _, c := range []struct {
		name     string
		stopping bool
		want     protocol.Status
	}{{"stopping", true, protocol.StatusInterrupted}, {"running on", false, protocol.StatusFailed}} {
		t.Run(c.name, func(t *testing.T) {
			l := newLayout(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := unreachableRunner{}
			if c.stopping {
				r.stop = cancel
			}
			opts := Options{Layout: l, Runner: r, Logger: testLogger(t), Task: "t1", Grace: 10 * time.Second}
			if !c.stopping {
				// No stop comes, so the whole settle is waited out whatever
				// its length: the default's 2s would only slow the test.
				opts.StopSettle = 100 * time.Millisecond
			}
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, opts)
			}()
			dropCommand(t, l, command("t1", 1))
			rep := waitReport(t, l, "t1", 1)
			if rep.Status != c.want {
				t.Errorf("status %s (%s), want %s", rep.Status, rep.Error, c.want)
			}
			cancel()
			<-done
		})
	}
}
