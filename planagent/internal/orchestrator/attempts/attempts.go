// Package attempts keeps the attempts' results on the run record
// (runrecord.TaskInfo.Results) and their spans on the wall clock
// (TaskInfo.Spans) while the orchestrator's loop runs them: every change
// of an attempt's status is one of the transitions below, named for what
// happened to the attempt, and refused, with an error and the record
// unchanged, when it cannot happen from where the attempt is.
//
//	(none), failed, stopped, interrupted ─Dispatched→ running
//	running ─Checking→ checking ─Checked→ held (passed its check) or checking (did not)
//	held ─Tried→ passed (queued for the merge) ─Completed→ completed
//	passed ─Retaken→ held (resume: tried and not merged)
//	running, checking, passed ─Failed→ failed
//	running ─Stopped→ stopped (side by side, another won or the budget stopped them)
//	checking ─Stopped→ stopped (side by side, its task ended while it was checked)
//	running ─Interrupted→ interrupted (one at a time, requeued)
//	running ─Completed→ completed (one at a time)
//
// The statuses are runrecord's (AttemptRunning…): the views compare them
// without importing this package, which depguard keeps from them.
//
// A number comes back to running after failed, stopped or interrupted
// because a refunded attempt (taskgraph.Refund) or a replanned task
// counts its attempts again from there. One at a time, an attempt with no
// result (a record of a version before the results) is taken as running.
//
// It is beside series.Tracker, not in it: a series is the loop's state of
// a task of several attempts and dies with the loop, while every attempt,
// of a task of one attempt too, has its result here, on the record that
// resume and the views read. series.Tracker says which attempts a series
// still follows; this says what each attempt became. The executor tells
// both, each refusing what it cannot hold.
//
// Its own package, so that nothing but these methods needs the record's
// result and span helpers (TaskInfo.Result, OpenSpan, CloseAttemptSpan…);
// the orchestrator's TestOneOwnerOfTheResults keeps it so. It reads no
// files and starts nothing. The run's one writer calls it: the loop's
// goroutine, or `planagent pick` on a run no planagent drives.
package attempts

import (
	"fmt"
	"slices"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// Results is the attempts' results and spans of a run's tasks on its
// record.
type Results struct {
	info func(id string) *runrecord.TaskInfo // task id's record, made when missing
	now  func() time.Time
}

// New is the Results of the tasks info gives the record of (making one
// when missing), on the clock now.
func New(info func(id string) *runrecord.TaskInfo, now func() time.Time) *Results {
	return &Results{info: info, now: now}
}

// find is attempt n's result on in, nil when it has none.
func find(in *runrecord.TaskInfo, n int) *runrecord.AttemptResult {
	i := slices.IndexFunc(in.Results, func(r runrecord.AttemptResult) bool { return r.Attempt == n })
	if i < 0 {
		return nil
	}
	return &in.Results[i]
}

// from checks that attempt n of task id is in one of the statuses ok (""
// for no result yet) before it is what; its result, nil when it has none.
func (b *Results) from(id string, n int, what string, ok ...string) (*runrecord.TaskInfo, *runrecord.AttemptResult, error) {
	in := b.info(id)
	res := find(in, n)
	status := ""
	if res != nil {
		status = res.Status
	}
	if !slices.Contains(ok, status) {
		if status == "" {
			status = "not dispatched"
		}
		return nil, nil, fmt.Errorf("attempts: attempt %d of task %s %s while %s", n, id, what, status)
	}
	return in, res, nil
}

// Dispatched: attempt n of task id starts, now, its span with it: beside
// the others still open when its task runs them side by side, else as the
// task's one (a span left open by a crash ends as interrupted). It returns
// the time it was dispatched at.
func (b *Results) Dispatched(id string, n int, side bool) (time.Time, error) {
	in, _, err := b.from(id, n, "dispatched", "", runrecord.AttemptFailed, runrecord.AttemptStopped, runrecord.AttemptInterrupted)
	if err != nil {
		return time.Time{}, err
	}
	at := b.now()
	if side {
		in.OpenAttemptSpan(n, at)
	} else {
		in.OpenSpan(n, at)
	}
	in.Result(n).Status = runrecord.AttemptRunning
	return at, nil
}

// Hinted: attempt n's command tells it why an earlier one failed (sent
// again on resume too, where a record of a version before the results
// has none for it: made here).
func (b *Results) Hinted(id string, n int) error {
	in, _, err := b.from(id, n, "hinted", "", runrecord.AttemptRunning)
	if err != nil {
		return err
	}
	in.Result(n).Hinted = true
	return nil
}

// Checking: attempt n, side by side, is squashed and checked on its own
// result; a check cut short (resume) is made again.
func (b *Results) Checking(id string, n int) error {
	_, res, err := b.from(id, n, "checked", runrecord.AttemptRunning, runrecord.AttemptChecking)
	if err != nil {
		return err
	}
	res.Status = runrecord.AttemptChecking
	return nil
}

// Check is what a check of an attempt on its own result found.
type Check struct {
	Acceptance string // what its acceptance commands (and the judge) printed
	Ref        string // where a failing result is kept ("" none)
	// Candidate is what the ranking reads of an attempt that passed; nil
	// when it did not, or could not be checked.
	Candidate *runrecord.Candidate
}

// Checked: attempt n's check came back. One that passed is held until
// its task's attempts have ended; one that did not stays checking until
// it is ended (Failed), or checked again on resume.
func (b *Results) Checked(id string, n int, c Check) error {
	_, res, err := b.from(id, n, "checked", runrecord.AttemptChecking)
	if err != nil {
		return err
	}
	res.Acceptance, res.Ref = c.Acceptance, c.Ref
	if c.Candidate != nil {
		res.Status, res.Candidate = runrecord.AttemptHeld, c.Candidate
	}
	return nil
}

// Ranked: task id's passing attempts in order, best first.
func (b *Results) Ranked(id string, order []int) {
	in := b.info(id)
	for i, n := range order {
		if res := find(in, n); res != nil {
			res.Rank = i + 1
		}
	}
}

// Tried: attempt n, held, goes to the merge; judgeReason is the LLM
// judge's when it picked it ("" none).
func (b *Results) Tried(id string, n int, judgeReason string) error {
	_, res, err := b.from(id, n, "tried for the merge", runrecord.AttemptHeld)
	if err != nil {
		return err
	}
	res.Status = runrecord.AttemptPassed
	if judgeReason != "" {
		res.JudgeReason = judgeReason
	}
	return nil
}

// Retaken: attempt n was tried for the merge and a resume finds it not
// merged: it is held again.
func (b *Results) Retaken(id string, n int) error {
	_, res, err := b.from(id, n, "held again", runrecord.AttemptPassed)
	if err != nil {
		return err
	}
	if res.Candidate == nil {
		return fmt.Errorf("attempts: attempt %d of task %s held again with no candidate", n, id)
	}
	res.Status = runrecord.AttemptHeld
	return nil
}

// Failed: attempt n ended without passing, for why (its report, check,
// acceptance or merge; its death or time-out). Side by side its span ends
// here and it has no rank; one at a time the task's end closes its span
// (Closed).
func (b *Results) Failed(id string, n int, why string, side bool) error {
	ok := []string{runrecord.AttemptRunning, runrecord.AttemptChecking, runrecord.AttemptPassed}
	if !side {
		ok = []string{"", runrecord.AttemptRunning} // a record of a version before the results: made here
	}
	in, _, err := b.from(id, n, "failed", ok...)
	if err != nil {
		return err
	}
	res := in.Result(n)
	res.Status, res.Error = runrecord.AttemptFailed, why
	if side {
		in.CloseAttemptSpan(n, "failed", b.now())
		res.Rank = 0
	}
	return nil
}

// Stopped: attempt n, side by side and running or being checked, was
// given up on for why.
func (b *Results) Stopped(id string, n int, why string) error {
	in, res, err := b.from(id, n, "stopped", runrecord.AttemptRunning, runrecord.AttemptChecking)
	if err != nil {
		return err
	}
	res.Status, res.Error = runrecord.AttemptStopped, why
	in.CloseAttemptSpan(n, "interrupted", b.now())
	return nil
}

// Interrupted: attempt n, one at a time, ended through no fault of its
// own (why); its task goes back to pending.
func (b *Results) Interrupted(id string, n int, why string) error {
	in, _, err := b.from(id, n, "interrupted", "", runrecord.AttemptRunning)
	if err != nil {
		return err
	}
	res := in.Result(n)
	res.Status, res.Error = runrecord.AttemptInterrupted, why
	in.CloseSpan("interrupted", b.now())
	return nil
}

// Completed: attempt n was merged, the task's result. One at a time it is
// the first passing one, rank 1. Side by side it was tried for the merge
// (ranked by then); its span ends here, and so do those of the other
// passing ones not kept yet, passed, not merged: Unkept is what is left
// to keep under their refs.
func (b *Results) Completed(id string, n int, side bool) error {
	if !side {
		in, _, err := b.from(id, n, "completed", "", runrecord.AttemptRunning)
		if err != nil {
			return err
		}
		res := in.Result(n)
		res.Status, res.Error, res.Rank = runrecord.AttemptCompleted, "", 1
		return nil
	}
	in, res, err := b.from(id, n, "completed", runrecord.AttemptPassed)
	if err != nil {
		return err
	}
	now := b.now()
	in.CloseAttemptSpan(n, "completed", now)
	for i := range in.Results {
		o := &in.Results[i]
		if o.Candidate == nil || o.Attempt == n || o.Ref != "" {
			continue
		}
		if o.Status == runrecord.AttemptHeld {
			o.Status = runrecord.AttemptPassed
		}
		in.CloseAttemptSpan(o.Attempt, "passed", now)
	}
	res.Status, res.Error = runrecord.AttemptCompleted, ""
	if res.Rank == 0 {
		res.Rank = 1
	}
	return nil
}

// Unkept is task id's passing attempts, not merged, whose results are not
// kept under a ref yet, in the record's order.
func (b *Results) Unkept(id string) []int {
	var out []int
	for _, res := range b.info(id).Results {
		if res.Candidate != nil && res.Status != runrecord.AttemptCompleted && res.Ref == "" {
			out = append(out, res.Attempt)
		}
	}
	return out
}

// Kept: attempt n's result, not merged, is kept under ref.
func (b *Results) Kept(id string, n int, ref string) {
	if res := find(b.info(id), n); res != nil {
		res.Ref = ref
	}
}

// Picked: a person chose attempt n, which passed and was not merged, over
// the one merged (`planagent pick`, on a run no planagent drives): n is
// merged now, rank 1, and the one merged before (was; 0 none) takes n's
// rank. Side by side their statuses say it too: n completed, was passed.
func (b *Results) Picked(id string, n int) (was int, err error) {
	in := b.info(id)
	p := find(in, n)
	switch {
	case p == nil:
		return 0, fmt.Errorf("attempts: attempt %d of task %s picked while not dispatched", n, id)
	case p.Rank == 1:
		return 0, fmt.Errorf("attempts: attempt %d of task %s picked while it is the one merged", n, id)
	case p.Rank == 0:
		return 0, fmt.Errorf("attempts: attempt %d of task %s picked while it did not pass", n, id)
	}
	var w *runrecord.AttemptResult
	for i := range in.Results {
		if in.Results[i].Rank == 1 {
			w = &in.Results[i]
		}
	}
	rank := p.Rank
	p.Rank, p.Picked = 1, true
	if p.Status == runrecord.AttemptPassed {
		p.Status = runrecord.AttemptCompleted
		if w != nil && w.Status == runrecord.AttemptCompleted {
			w.Status = runrecord.AttemptPassed
		}
	}
	if w == nil {
		return 0, nil
	}
	w.Rank, w.Picked = rank, false
	return w.Attempt, nil
}

// Closed: task id ended with status: the last span, if still open, ends,
// named for the task's attempt (TaskInfo.CloseSpan). One at a time that
// is its attempt's; side by side each attempt's span ended with it.
func (b *Results) Closed(id, status string) { b.info(id).CloseSpan(status, b.now()) }

// What an attempt's agent and its commands left, booked on its result
// whatever its status: a report, the gateway's count, the egress proxy's
// refusals, the acceptance commands and the merge.

// Reported: attempt n's report is in: its tokens and time, and, side by
// side, its own summary ("" one at a time: the task's is the attempt's).
func (b *Results) Reported(id string, n int, summary string, tokens protocol.Tokens, took time.Duration) {
	res := b.info(id).Result(n)
	if summary != "" {
		res.Summary = summary
	}
	res.Tokens.Add(tokens)
	res.Duration += took
}

// Used: what the gateway counted of attempt n, which ended without a
// report.
func (b *Results) Used(id string, n int, tokens protocol.Tokens) {
	b.info(id).Result(n).Tokens.Add(tokens)
}

// Refused: what the egress proxy turned away of attempt n, so far.
func (b *Results) Refused(id string, n int, refused []string) {
	b.info(id).Result(n).EgressRefused = refused
}

// Accepted: what the acceptance commands printed on attempt n's result
// (one at a time, in the workspace).
func (b *Results) Accepted(id string, n int, output string) {
	b.info(id).Result(n).Acceptance = output
}

// Merged: attempt n's merge came back: what its acceptance commands
// printed there, and where its result is kept when it was not merged.
func (b *Results) Merged(id string, n int, ref, acceptance string) {
	res := b.info(id).Result(n)
	res.Ref, res.Acceptance = ref, acceptance
}

// Of is attempt n's result as the record has it (a copy), its Status ""
// when it has none.
func (b *Results) Of(id string, n int) runrecord.AttemptResult {
	if res := find(b.info(id), n); res != nil {
		return *res
	}
	return runrecord.AttemptResult{}
}
