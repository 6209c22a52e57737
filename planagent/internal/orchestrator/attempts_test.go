package orchestrator

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// A task of 3 attempts at --max-retries 0, with a decider that would give
// up at once: its acceptance fails twice, the third attempt passes and
// completes it. The decider is never asked; attempt 2 is told the first
// failure, attempt 3 deliberately not (next.EscalationHint).
func TestDriveEscalatesATaskOfSeveralAttempts(t *testing.T) {
	l := newLayout(t)
	var mu sync.Mutex
	hints := map[int][]string{}
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		mu.Lock()
		hints[c.Attempt] = c.Hints
		mu.Unlock()
		return completed(c)
	})
	rt.exec = func(command string) attempt.ExecResult {
		mu.Lock()
		defer mu.Unlock()
		if len(hints) < 3 {
			return attempt.ExecResult{ExitCode: 1, Output: "FAIL: parser_test.go:12: want 7, got 6"}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	st := newTestState(t, plan.Task{ID: "risky", Description: "hard", Acceptance: []string{"go test ./parser"}, Attempts: 3})
	d := &countingDecider{}
	o := New(Options{Layout: l, Runtime: rt, MaxRetries: 0, Decider: d})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["risky"]; got != taskgraph.Completed || st.Status != runrecord.RunCompleted {
		t.Fatalf("risky %s, run %s; want completed on the third attempt", got, st.Status)
	}
	if n := rt.count("risky"); n != 3 {
		t.Errorf("risky dispatched %d times, want 3", n)
	}
	if d.calls() != 0 {
		t.Errorf("the decider was asked %d times; a task's own attempts are not its to refuse", d.calls())
	}
	// Every attempt is on the record: how it ended, why, its rank, its tokens.
	res := st.Info["risky"].Results
	if len(res) != 3 {
		t.Fatalf("results %+v, want 3 attempts", res)
	}
	for i, want := range []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed", Tokens: protocol.Tokens{Prompt: 10, Completion: 2}},
		{Attempt: 2, Status: "failed", Hinted: true, Tokens: protocol.Tokens{Prompt: 10, Completion: 2}},
		{Attempt: 3, Status: "completed", Rank: 1, Tokens: protocol.Tokens{Prompt: 10, Completion: 2}},
	} {
		got := res[i]
		if got.Attempt != want.Attempt || got.Status != want.Status || got.Hinted != want.Hinted || got.Rank != want.Rank ||
			got.Tokens.Prompt != want.Tokens.Prompt || got.Tokens.Completion != want.Tokens.Completion || got.Duration <= 0 {
			t.Errorf("attempt %d: %+v, want %+v", i+1, got, want)
		}
		if (want.Status == "failed") != strings.Contains(got.Error, "want 7, got 6") {
			t.Errorf("attempt %d error %q", i+1, got.Error)
		}
	}
	told := func(n int) bool { return strings.Contains(strings.Join(hints[n], "\n"), "want 7, got 6") }
	if told(1) || !told(2) || told(3) {
		t.Errorf("told the failure: attempt 1 %v, 2 %v, 3 %v; want only 2 (hints %v)", told(1), told(2), told(3), hints)
	}
}

// The run's attempts setting is the default of the tasks that do not say;
// a task that passes first time costs one attempt (escalate).
func TestDriveAttemptsDefaultEscalatesOnlyOnFailure(t *testing.T) {
	l := newLayout(t)
	rt := newFakeRuntime(l, completed)
	st := newTestState(t, plan.Task{ID: "easy", Description: "passes", Acceptance: []string{"true"}})
	o := New(Options{Layout: l, Runtime: rt, MaxRetries: 0, Attempts: 3})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["easy"]; got != taskgraph.Completed || rt.count("easy") != 1 {
		t.Errorf("easy %s after %d attempts; want completed after 1", got, rt.count("easy"))
	}
}

// countingDecider gives up on every failure, counting the calls.
type countingDecider struct {
	mu sync.Mutex
	n  int
}

func (d *countingDecider) Decide(_ context.Context, _ Failure) Verdict {
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
	return Verdict{Action: Continue, Reason: "give up"}
}

func (d *countingDecider) calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}
