package attempts

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// op is one transition of an attempt of task "t1".
type op func(b *Results) error

func dispatched(n int, side bool) op {
	return func(b *Results) error {
		_, err := b.Dispatched("t1", n, side)
		b.info("t1").Attempt = n // as the executor records it (the task's span ends as its attempt's)
		return err
	}
}
func hinted(n int) op   { return func(b *Results) error { return b.Hinted("t1", n) } }
func checking(n int) op { return func(b *Results) error { return b.Checking("t1", n) } }
func checked(n int, pass bool) op {
	return func(b *Results) error {
		c := Check{Acceptance: "$ make test\n(exit 0)\n"}
		if pass {
			c.Candidate = &runrecord.Candidate{Commit: "c" + string(rune('0'+n)), Base: "base", Passed: 1, Commands: 1}
		} else {
			c.Acceptance, c.Ref = "$ make test\n(exit 1)\n", "refs/kept"
		}
		return b.Checked("t1", n, c)
	}
}
func tried(n int) op   { return func(b *Results) error { return b.Tried("t1", n, "") } }
func retaken(n int) op { return func(b *Results) error { return b.Retaken("t1", n) } }
func failed(n int, side bool) op {
	return func(b *Results) error { return b.Failed("t1", n, "boom", side) }
}
func stopped(n int) op { return func(b *Results) error { return b.Stopped("t1", n, "another won") } }

// interrupted: attempt 1, one at a time, requeued.
func interrupted() op {
	return func(b *Results) error { return b.Interrupted("t1", 1, "the agent died") }
}
func completed(n int, side bool) op {
	return func(b *Results) error { return b.Completed("t1", n, side) }
}

// clock is a clock that moves a second each time it is read, so every
// span's ends can be told apart.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func newResults() (*Results, *runrecord.TaskInfo) {
	in := &runrecord.TaskInfo{}
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return New(func(id string) *runrecord.TaskInfo {
		if id != "t1" {
			panic("a task the test does not have: " + id)
		}
		return in
	}, c.now), in
}

func apply(t *testing.T, b *Results, ops []op) {
	t.Helper()
	for i, o := range ops {
		if err := o(b); err != nil {
			t.Fatalf("transition %d: %v", i, err)
		}
	}
}

// record is the task's record as state.json keeps it.
func record(t *testing.T, in *runrecord.TaskInfo) string {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What cannot happen to an attempt is refused, named, and leaves the record
// as it was: the executor returns the error and the run stops rather than
// the record (and next, resume and the views reading it) holding an
// attempt that cannot be.
func TestResultsRefuseTheImpossible(t *testing.T) {
	side := []op{dispatched(1, true)}
	held := append(side[:1:1], checking(1), checked(1, true))
	for _, tc := range []struct {
		name   string
		before []op
		op     op
		want   string
	}{
		{"a dispatch of an attempt running", side, dispatched(1, true), "attempt 1 of task t1 dispatched while running"},
		{"a dispatch of an attempt being checked", append(side[:1:1], checking(1)), dispatched(1, true), "dispatched while checking"},
		{"a dispatch of an attempt held", held, dispatched(1, true), "dispatched while held"},
		{"a dispatch of an attempt merged", []op{dispatched(1, false), completed(1, false)}, dispatched(1, false), "dispatched while completed"},
		{"a hint to an attempt being checked", append(side[:1:1], checking(1)), hinted(1), "attempt 1 of task t1 hinted while checking"},
		{"a hint to an attempt that failed", []op{dispatched(1, false), failed(1, false)}, hinted(1), "hinted while failed"},
		{"a check of no attempt", nil, checking(1), "attempt 1 of task t1 checked while not dispatched"},
		{"a check of a held attempt", held, checking(1), "checked while held"},
		{"a check of a stopped attempt", append(side[:1:1], stopped(1)), checking(1), "checked while stopped"},
		{"a check's result with no check", side, checked(1, true), "attempt 1 of task t1 checked while running"},
		{"a check's result twice", held, checked(1, false), "checked while held"},
		{"a merge of an attempt running", side, tried(1), "attempt 1 of task t1 tried for the merge while running"},
		{"a merge of an attempt that failed its check", append(side[:1:1], checking(1), checked(1, false)), tried(1), "tried for the merge while checking"},
		{"a merge tried twice", append(held[:3:3], tried(1)), tried(1), "tried for the merge while passed"},
		{"a held attempt held again", held, retaken(1), "attempt 1 of task t1 held again while held"},
		{"a failed attempt held again", append(side[:1:1], failed(1, true)), retaken(1), "held again while failed"},
		{"a side-by-side failure of no attempt", nil, failed(1, true), "attempt 1 of task t1 failed while not dispatched"},
		{"a failure of a held attempt", held, failed(1, true), "failed while held"},
		{"a failure after the stop", append(side[:1:1], stopped(1)), failed(1, true), "failed while stopped"},
		{"a failure twice", []op{dispatched(1, false), failed(1, false)}, failed(1, false), "failed while failed"},
		{"a failure of a merged attempt", []op{dispatched(1, false), completed(1, false)}, failed(1, false), "failed while completed"},
		{"a stop of no attempt", nil, stopped(1), "attempt 1 of task t1 stopped while not dispatched"},
		{"a stop of a held attempt", held, stopped(1), "stopped while held"},
		{"a stop twice", append(side[:1:1], stopped(1)), stopped(1), "stopped while stopped"},
		{"an interruption of a merged attempt", []op{dispatched(1, false), completed(1, false)}, interrupted(), "attempt 1 of task t1 interrupted while completed"},
		{"an interruption twice", []op{dispatched(1, false), interrupted()}, interrupted(), "interrupted while interrupted"},
		{"a merge of an attempt not tried", held, completed(1, true), "attempt 1 of task t1 completed while held"},
		{"a merge of a side-by-side attempt running", side, completed(1, true), "completed while running"},
		{"a merge twice", []op{dispatched(1, false), completed(1, false)}, completed(1, false), "completed while completed"},
		{"a merge of an attempt that failed", []op{dispatched(1, false), failed(1, false)}, completed(1, false), "completed while failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, in := newResults()
			apply(t, b, tc.before)
			was := record(t, in)
			err := tc.op(b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one saying %q", err, tc.want)
			}
			if now := record(t, in); now != was {
				t.Errorf("a refused transition changed the record:\nbefore %s\nafter  %s", was, now)
			}
		})
	}
}

// at is the test clock's time after n reads.
func at(n int) time.Time { return time.Date(2026, 1, 2, 3, 4, 5+n, 0, time.UTC) }

// What each life of an attempt leaves on the record: its result and its
// span, as status --json, the summary and the web view read them.
func TestResultsTransitions(t *testing.T) {
	cand := func(n int) *runrecord.Candidate {
		return &runrecord.Candidate{Commit: "c" + string(rune('0'+n)), Base: "base", Passed: 1, Commands: 1}
	}
	for _, tc := range []struct {
		name  string
		ops   []op
		want  []runrecord.AttemptResult
		spans []runrecord.Span
	}{
		{
			name:  "one at a time, merged",
			ops:   []op{dispatched(1, false), completed(1, false), func(b *Results) error { b.Closed("t1", "completed"); return nil }},
			want:  []runrecord.AttemptResult{{Attempt: 1, Status: runrecord.AttemptCompleted, Rank: 1}},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(2), Status: "completed"}},
		},
		{
			name: "one at a time, failed, then a second told why",
			ops: []op{dispatched(1, false), failed(1, false), func(b *Results) error { b.Closed("t1", "failed"); return nil },
				dispatched(2, false), hinted(2)},
			want: []runrecord.AttemptResult{{Attempt: 1, Status: runrecord.AttemptFailed, Error: "boom"}, {Attempt: 2, Status: runrecord.AttemptRunning, Hinted: true}},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(2), Status: "failed"},
				{Attempt: 2, Start: at(3)}},
		},
		{
			name:  "one at a time, interrupted, then dispatched again under its number (refunded)",
			ops:   []op{dispatched(1, false), interrupted(), dispatched(1, false)},
			want:  []runrecord.AttemptResult{{Attempt: 1, Status: runrecord.AttemptRunning, Error: "the agent died"}},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(2), Status: "interrupted"}, {Attempt: 1, Start: at(3)}},
		},
		{
			name: "a span a crash left open ends as interrupted at the next dispatch",
			ops:  []op{dispatched(1, false), dispatched(2, false)},
			want: []runrecord.AttemptResult{{Attempt: 1, Status: runrecord.AttemptRunning}, {Attempt: 2, Status: runrecord.AttemptRunning}},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(2), Status: "interrupted"},
				{Attempt: 2, Start: at(2)}},
		},
		{
			name: "side by side: one held and merged, one passed and not merged, one failed its check, one stopped",
			ops: []op{dispatched(1, true), dispatched(2, true), dispatched(3, true), dispatched(4, true),
				checking(1), checking(2), checking(3), stopped(4),
				checked(1, true), checked(2, true), checked(3, false), failed(3, true),
				func(b *Results) error { b.Ranked("t1", []int{2, 1}); return nil }, tried(2), completed(2, true)},
			want: []runrecord.AttemptResult{
				{Attempt: 1, Status: runrecord.AttemptPassed, Rank: 2, Acceptance: "$ make test\n(exit 0)\n", Candidate: cand(1)},
				{Attempt: 2, Status: runrecord.AttemptCompleted, Rank: 1, Acceptance: "$ make test\n(exit 0)\n", Candidate: cand(2)},
				{Attempt: 3, Status: runrecord.AttemptFailed, Error: "boom", Acceptance: "$ make test\n(exit 1)\n", Ref: "refs/kept"},
				{Attempt: 4, Status: runrecord.AttemptStopped, Error: "another won"},
			},
			spans: []runrecord.Span{
				{Attempt: 1, Start: at(1), End: at(7), Status: "passed"},
				{Attempt: 2, Start: at(2), End: at(7), Status: "completed"},
				{Attempt: 3, Start: at(3), End: at(6), Status: "failed"},
				{Attempt: 4, Start: at(4), End: at(5), Status: "interrupted"},
			},
		},
		{
			name: "side by side: tried, rejected by the merge's gate, the next-ranked tried",
			ops: []op{dispatched(1, true), dispatched(2, true), checking(1), checking(2), checked(1, true), checked(2, true),
				tried(1), failed(1, true), tried(2)},
			want: []runrecord.AttemptResult{
				{Attempt: 1, Status: runrecord.AttemptFailed, Error: "boom", Acceptance: "$ make test\n(exit 0)\n", Candidate: cand(1)},
				{Attempt: 2, Status: runrecord.AttemptPassed, Acceptance: "$ make test\n(exit 0)\n", Candidate: cand(2)},
			},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(3), Status: "failed"}, {Attempt: 2, Start: at(2)}},
		},
		{
			name: "side by side, resumed: tried and not merged is held again, a check cut short is made again",
			ops: []op{dispatched(1, true), dispatched(2, true), checking(1), checking(2), checked(1, true), tried(1),
				retaken(1), checking(2)},
			want: []runrecord.AttemptResult{
				{Attempt: 1, Status: runrecord.AttemptHeld, Acceptance: "$ make test\n(exit 0)\n", Candidate: cand(1)},
				{Attempt: 2, Status: runrecord.AttemptChecking},
			},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1)}, {Attempt: 2, Start: at(2)}},
		},
		{
			name: "side by side: one merged while the next was checked, stopped at its task's end",
			ops: []op{dispatched(1, true), dispatched(2, true), checking(1), checking(2), checked(1, true),
				tried(1), completed(1, true), stopped(2), func(b *Results) error { b.Closed("t1", "completed"); return nil }},
			want: []runrecord.AttemptResult{
				{Attempt: 1, Status: runrecord.AttemptCompleted, Rank: 1, Acceptance: "$ make test\n(exit 0)\n", Candidate: cand(1)},
				{Attempt: 2, Status: runrecord.AttemptStopped, Error: "another won"},
			},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(3), Status: "completed"},
				{Attempt: 2, Start: at(2), End: at(4), Status: "interrupted"}},
		},
		{
			name: "side by side, a stopped attempt's number dispatched again (the budget's series requeued)",
			ops:  []op{dispatched(1, true), stopped(1), dispatched(1, true)},
			want: []runrecord.AttemptResult{{Attempt: 1, Status: runrecord.AttemptRunning, Error: "another won"}},
			spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(2), Status: "interrupted"},
				{Attempt: 1, Start: at(3)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, in := newResults()
			apply(t, b, tc.ops)
			want := &runrecord.TaskInfo{Results: tc.want, Spans: tc.spans}
			if got, w := record(t, &runrecord.TaskInfo{Results: in.Results, Spans: in.Spans}), record(t, want); got != w {
				t.Errorf("the record:\ngot  %s\nwant %s", got, w)
			}
		})
	}
}

// What the agents and their commands leave is booked on the attempt's
// result whatever its status, and read back as a copy.
func TestResultsBookings(t *testing.T) {
	b, in := newResults()
	apply(t, b, []op{dispatched(1, true), dispatched(2, true)})
	b.Reported("t1", 1, "did it", protocol.Tokens{Prompt: 10, Completion: 2}, time.Minute)
	b.Reported("t1", 2, "", protocol.Tokens{Prompt: 1}, time.Second)
	b.Used("t1", 2, protocol.Tokens{Prompt: 5})
	b.Refused("t1", 2, []string{"evil.example:443: not allowed"})
	b.Accepted("t1", 1, "$ true\n(exit 0)\n")
	b.Merged("t1", 2, "refs/kept/2", "$ make\n(exit 0)\n")
	b.Kept("t1", 1, "refs/kept/1")
	want := []runrecord.AttemptResult{
		{Attempt: 1, Status: runrecord.AttemptRunning, Summary: "did it", Tokens: protocol.Tokens{Prompt: 10, Completion: 2}, Duration: time.Minute,
			Acceptance: "$ true\n(exit 0)\n", Ref: "refs/kept/1"},
		{Attempt: 2, Status: runrecord.AttemptRunning, Tokens: protocol.Tokens{Prompt: 6}, Duration: time.Second,
			EgressRefused: []string{"evil.example:443: not allowed"}, Acceptance: "$ make\n(exit 0)\n", Ref: "refs/kept/2"},
	}
	if got, w := record(t, &runrecord.TaskInfo{Results: in.Results}), record(t, &runrecord.TaskInfo{Results: want}); got != w {
		t.Errorf("the results:\ngot  %s\nwant %s", got, w)
	}
	if got := b.Of("t1", 3); got.Status != "" {
		t.Errorf("an attempt with no result read as %+v", got)
	}
	res := b.Of("t1", 1)
	res.Status = runrecord.AttemptFailed
	if b.Of("t1", 1).Status != runrecord.AttemptRunning {
		t.Error("Of gave the record's result, not a copy")
	}
	if n := len(in.Results); n != 2 {
		t.Errorf("reading made results: %d", n)
	}
}

// Unkept is what completing a task side by side leaves to keep under refs:
// the passing attempts not merged and not kept yet.
func TestResultsUnkept(t *testing.T) {
	b, _ := newResults()
	apply(t, b, []op{dispatched(1, true), dispatched(2, true), dispatched(3, true), dispatched(4, true),
		checking(1), checking(2), checking(3), checked(1, true), checked(2, true), checked(3, true),
		tried(3), func(b *Results) error { b.Kept("t1", 2, "refs/2"); return nil }, completed(3, true)})
	if got := b.Unkept("t1"); len(got) != 1 || got[0] != 1 {
		t.Errorf("unkept %v, want [1]", got)
	}
}

// A pick (planagent pick) swaps the ranks of the attempt picked and the
// one merged, and side by side their statuses; what it cannot pick it
// refuses, the record unchanged.
func TestResultsPicked(t *testing.T) {
	merged := []op{dispatched(1, true), dispatched(2, true), dispatched(3, true), checking(1), checking(2), checking(3),
		checked(1, true), checked(2, true), checked(3, false), failed(3, true),
		func(b *Results) error { b.Ranked("t1", []int{1, 2}); return nil }, tried(1), completed(1, true)}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{1, "attempt 1 of task t1 picked while it is the one merged"},
		{3, "attempt 3 of task t1 picked while it did not pass"},
		{4, "attempt 4 of task t1 picked while not dispatched"},
	} {
		b, in := newResults()
		apply(t, b, merged)
		was := record(t, in)
		if _, err := b.Picked("t1", tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pick of %d: got error %v, want one saying %q", tc.n, err, tc.want)
		}
		if now := record(t, in); now != was {
			t.Errorf("a refused pick changed the record:\nbefore %s\nafter  %s", was, now)
		}
	}
	b, in := newResults()
	apply(t, b, merged)
	was, err := b.Picked("t1", 2)
	if err != nil || was != 1 {
		t.Fatalf("Picked = %d, %v; want 1, nil", was, err)
	}
	got := map[int]string{}
	for _, r := range in.Results {
		got[r.Attempt] = fmt.Sprintf("%s %d %v", r.Status, r.Rank, r.Picked)
	}
	if want := map[int]string{1: "passed 2 false", 2: "completed 1 true", 3: "failed 0 false"}; !maps.Equal(got, want) {
		t.Errorf("after the pick %v, want %v", got, want)
	}
}
