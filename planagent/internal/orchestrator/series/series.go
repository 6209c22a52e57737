// Package series keeps the series of the tasks of several attempts run
// side by side (docs/attempts.md) while the orchestrator's loop runs
// them: which attempts are under way, which were stopped, which one is
// tried for the merge or under review, and why the last one failed. It
// also writes the record's part of a series (runrecord.Series): where it
// begins, why its first attempt failed, the LLM judge's pick.
//
// It is a package of its own, not a file of the orchestrator, so that the
// compiler holds what a comment could only ask: no code of the loop or
// the executor can change a series but through the operations below,
// each named for what happened and refusing what cannot happen. It reads
// no files and starts nothing; the loop's goroutine alone calls it.
//
// What each attempt became (its status, result and span on the record) is
// not here but beside it, in package attempts: a series lives only while
// the loop runs it, and only for a task of several attempts, where an
// attempt's result is every task's and stays on the record; the View
// below reads those results.
package series

import (
	"fmt"
	"maps"
	"slices"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// underReview is chosen's value while the LLM judge is asked about the
// tied best: the task chooses nothing meanwhile.
const underReview = -1

// Tracker is the series of the tasks of several attempts under way, by
// task id. It keeps these invariants, each operation refusing (with an
// error, the state unchanged) what would break one:
//   - an attempt starts once in a series, and only in a series begun (a
//     fresh dispatch) or taken up from the record (resume);
//   - an attempt under way (live) is not stopped, and a stopped one never
//     lives again, is not checked, ends no other way and is not chosen:
//     stopping ended it;
//   - only a live attempt is checked or stopped;
//   - a task has at most one attempt chosen for the merge, never a live
//     or stopped one, and is under review (the LLM judge asked about its
//     tied best) only with none chosen; a review ends only once begun;
//   - reading (View, Tasks, IsStopped, Live) changes nothing.
//
// An attempt that ends without passing (Ended) may be one the loop no
// longer follows (checked, or chosen and rejected by the merge's gate):
// it is refused only when stopped.
type Tracker struct {
	tasks map[string]*state
}

// state is one task's series as the loop keeps it besides its record.
type state struct {
	live    map[int]bool // started, not ended: being copied, running, being checked
	stopped map[int]bool // given up on once another won (first_pass_wins) or the budget stopped them
	chosen  int          // the candidate queued or being merged; 0 none, underReview
	lastErr string       // why the last attempt that ended failed or was stopped
}

// New is a Tracker with no series.
func New() *Tracker { return &Tracker{tasks: map[string]*state{}} }

func newState() *state { return &state{live: map[int]bool{}, stopped: map[int]bool{}} }

// Begin starts task id's series afresh at attempt from, on the record
// (in.Series) and in the loop: a task's first series may have bestOf
// attempts, a series after a retry one. It starts from base. The loop's
// state of an earlier series of the task is dropped.
func (t *Tracker) Begin(id string, in *runrecord.TaskInfo, from, bestOf int, base string) {
	size := bestOf
	if in.Series != nil {
		size = 1
	}
	in.Series = &runrecord.Series{From: from, Size: size, Base: base}
	t.tasks[id] = newState()
}

// Started: attempt n of task id was dispatched in its series.
func (t *Tracker) Started(id string, n int) error {
	s := t.tasks[id]
	switch {
	case s == nil:
		return fmt.Errorf("series: attempt %d of task %s started with no series begun", n, id)
	case s.live[n] || s.stopped[n]:
		return fmt.Errorf("series: attempt %d of task %s started twice", n, id)
	}
	s.live[n] = true
	return nil
}

// Resumed takes task id's series up as the record left it on resume, its
// attempts live those still running or being checked. A series is taken
// up once, before anything of it starts.
func (t *Tracker) Resumed(id string, live ...int) error {
	if t.tasks[id] != nil {
		return fmt.Errorf("series: task %s's series taken up while the loop already has it", id)
	}
	s := newState()
	for _, n := range live {
		s.live[n] = true
	}
	t.tasks[id] = s
	return nil
}

// Checked: attempt n's check on its own result came back (held or not);
// it is no longer under way.
func (t *Tracker) Checked(id string, n int) error {
	s := t.tasks[id]
	if s == nil || !s.live[n] {
		return fmt.Errorf("series: attempt %d of task %s checked while not under way", n, id)
	}
	delete(s.live, n)
	return nil
}

// Ended: attempt n of task id ended without passing, for reason: its
// check failed, it died or timed out, or the merge's gate rejected it
// (then the task chooses again). Why the series' first attempt failed
// goes on the record: the hint of the attempts told.
func (t *Tracker) Ended(id string, n int, reason string, in *runrecord.TaskInfo) error {
	s := t.tasks[id]
	switch {
	case s == nil:
		return fmt.Errorf("series: attempt %d of task %s ended with no series under way", n, id)
	case s.stopped[n]:
		return fmt.Errorf("series: attempt %d of task %s ended after it was stopped", n, id)
	}
	delete(s.live, n)
	if s.chosen == n {
		s.chosen = 0
	}
	s.lastErr = reason
	if in.Series != nil && n == in.Series.From {
		in.Series.FirstError = reason
	}
	return nil
}

// Live is task id's attempts under way, in order.
func (t *Tracker) Live(id string) []int {
	s := t.tasks[id]
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.live))
}

// Stopped: attempt n of task id, under way, was stopped for reason (another
// won, or the budget stopped them together).
func (t *Tracker) Stopped(id string, n int, reason string) error {
	s := t.tasks[id]
	if s == nil || !s.live[n] {
		return fmt.Errorf("series: attempt %d of task %s stopped while not under way", n, id)
	}
	delete(s.live, n)
	s.stopped[n] = true
	s.lastErr = reason
	return nil
}

// IsStopped tells whether attempt n of task id was stopped: its copy, made
// meanwhile, is not launched.
func (t *Tracker) IsStopped(id string, n int) bool {
	s := t.tasks[id]
	return s != nil && s.stopped[n]
}

// Chosen: attempt n, a held candidate, is queued for the merge.
func (t *Tracker) Chosen(id string, n int) error {
	s := t.tasks[id]
	switch {
	case s == nil:
		return fmt.Errorf("series: attempt %d of task %s chosen with no series under way", n, id)
	case n <= 0:
		return fmt.Errorf("series: attempt %d of task %s chosen: no such attempt", n, id)
	case s.chosen == underReview:
		return fmt.Errorf("series: attempt %d of task %s chosen while the LLM judge is asked", n, id)
	case s.chosen != 0:
		return fmt.Errorf("series: attempt %d of task %s chosen while attempt %d is", n, id, s.chosen)
	case s.live[n] || s.stopped[n]:
		return fmt.Errorf("series: attempt %d of task %s chosen before it passed its check", n, id)
	}
	s.chosen = n
	return nil
}

// UnderReview: the LLM judge is asked which of task id's tied best to
// merge; the task chooses nothing until it answers.
func (t *Tracker) UnderReview(id string) error {
	s := t.tasks[id]
	switch {
	case s == nil:
		return fmt.Errorf("series: task %s under review with no series under way", id)
	case s.chosen == underReview:
		return fmt.Errorf("series: task %s under review twice", id)
	case s.chosen != 0:
		return fmt.Errorf("series: task %s under review while attempt %d is chosen", id, s.chosen)
	}
	s.chosen = underReview
	return nil
}

// Reviewed: the LLM judge answered about task id's tied best, once per
// series: pick is the attempt it chose and reason why, or 0 when it gave
// no usable pick (the deterministic order stands). It goes on the record.
func (t *Tracker) Reviewed(id string, in *runrecord.TaskInfo, pick int, reason string) error {
	s := t.tasks[id]
	if s == nil || s.chosen != underReview || in.Series == nil {
		return fmt.Errorf("series: task %s reviewed while not under review", id)
	}
	s.chosen = 0
	in.Series.Reviewed, in.Series.Pick, in.Series.Reason = true, pick, reason
	return nil
}

// Finished: task id's series ended, merged or failed; the record keeps
// its results.
func (t *Tracker) Finished(id string) { delete(t.tasks, id) }

// Requeued: the budget stopped task id's series before an attempt passed;
// the record forgets it, and the task's next dispatch begins a whole
// series afresh.
func (t *Tracker) Requeued(id string, in *runrecord.TaskInfo) {
	in.Series = nil
	delete(t.tasks, id)
}

// Tasks is the tasks with a series in the loop, sorted.
func (t *Tracker) Tasks() []string { return slices.Sorted(maps.Keys(t.tasks)) }

// View fills what next reads of task id's series (tk.BestOf set) from
// the record (in) and the loop's state; inProgress tells whether the task
// is in progress (else its series is the next one's: BestOf attempts, or
// one after a retry).
func (t *Tracker) View(id string, in *runrecord.TaskInfo, inProgress bool, tk *next.Task) {
	if in == nil || in.Series == nil {
		tk.Series = tk.BestOf
		return
	}
	if !inProgress {
		tk.Series = 1 // a retry's series
		return
	}
	s := t.tasks[id]
	if s == nil {
		s = newState() // not taken up yet: nothing under way
	}
	tk.Series, tk.Chosen, tk.LastError = in.Series.Size, s.chosen != 0, s.lastErr
	for _, res := range in.Results {
		switch {
		case res.Attempt < in.Series.From:
			continue
		case res.Attempt == in.Series.From && res.Status == runrecord.AttemptFailed:
			tk.FirstFailed = true
		case res.Status == runrecord.AttemptHeld && res.Attempt != s.chosen:
			tk.Held++
		}
		tk.Started++
	}
	tk.Live = len(s.live) // none of them stopped
}
