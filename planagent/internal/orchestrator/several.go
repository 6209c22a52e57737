package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/judge"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/attempts"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// A task of several attempts (attempts: K > 1, in a run with checkpoints)
// runs them side by side, each in its own copy, its files named by its
// stem (protocol.Stem). Each finished attempt is squashed and checked on
// its own result (its acceptance commands, then the judge); the passing
// ones are held, on the record, until the series has ended; then the best
// (next.Rank) goes through the merge queue and its test gate, the next-
// ranked when the gate rejects it. next decides all of this; here it is
// carried out. docs/attempts.md.

// What the loop keeps of a task's current series besides the attempts'
// results on the record is run.series, a series.Tracker; the results are
// run.attempts' (attempts.Results). These functions tell both what
// happened, and each alone changes what it keeps.

// several reports whether task id's attempts run side by side. An
// attempt in progress without a series (a run resumed from a version
// that ran them one after another) finishes the way it started.
func (r *run) several(id string) bool {
	t, _ := r.g.Get(id)
	if !r.isolated() || bestOf(t, r.o.opts.Attempts) <= 1 {
		return false
	}
	in := r.st.Info[id]
	return t.Status != taskgraph.InProgress || in != nil && in.Series != nil
}

// key is the flight key (and file stem) of attempt n of task id.
func (r *run) key(id string, n int) string {
	if r.several(id) {
		return protocol.Stem(id, n)
	}
	return id
}

// attemptOf is the task and attempt a flight key names.
func (r *run) attemptOf(key string) (string, int) {
	id, n, _ := protocol.SplitStem(key)
	if n == 0 {
		n = r.info(id).Attempt
	}
	return id, n
}

// checked is the check of an attempt of a task of several, with what the
// ranking reads of it.
type checked struct {
	next.EvChecked
	cand   *runrecord.Candidate
	output string
	ref    string
}

// startCheck squashes attempt n of task id and runs its acceptance
// commands and the judge on its own result, off the loop; its copy is
// thrown away after. A commit that fails is kept under its ref.
func (r *run) startCheck(ctx context.Context, id string, n int) error {
	if err := r.attempts.Checking(id, n); err != nil {
		return err
	}
	t, _ := r.g.Get(id)
	base, summary := r.info(id).Series.Base, r.attempts.Of(id, n).Summary
	dir := r.o.opts.Layout.Attempt(r.st.RunID, id, n)
	subject, runID := id+": "+titleOf(t), r.st.RunID
	r.underway.checkStarted()
	r.merges.Go(func() {
		ev := r.work.check(ctx, t, n, dir, base, subject, summary, runID)
		r.send(ev)
	})
	return nil
}

func (w *worker) check(ctx context.Context, t taskgraph.Task, n int, dir, base, subject, summary, runID string) (out checked) {
	repo := w.opts.Repo
	out.EvChecked = next.EvChecked{ID: t.ID, Attempt: n}
	commit, removed, err := repo.Squash(ctx, dir, base, subject, summary)
	if err != nil {
		out.Failure = fmt.Sprintf("commit the attempt's changes: %v", err)
		out.Env = envErr("commit the attempt's changes", err)
		return out
	}
	if len(removed) > 0 {
		summary = strings.TrimSpace(summary + "\n\n(planagent removed from the task's copy: " + strings.Join(removed, "; ") + ")")
	}
	patch, err := repo.Diff(ctx, base, commit)
	if err != nil {
		out.Failure = fmt.Sprintf("read the attempt's diff: %v", err)
		return out
	}
	cand := &runrecord.Candidate{Commit: commit, Base: base, Summary: summary, Commands: len(t.Acceptance),
		Diff: diffLines(patch), Finished: w.opts.Now()}
	// The name of the merge's acceptance copy: the runtime (the egress
	// proxy) knows whose copy a command runs in by it (volume.AttemptOf),
	// and this attempt's merge, if it comes, makes its own after.
	accept := dir + volume.AcceptSuffix
	defer func() {
		if err := repo.RemoveCopy(accept); err != nil {
			w.opts.Logger.Warn("remove the check's copy", "dir", accept, "err", err)
		}
	}()
	if err := repo.RemoveCopy(accept); err != nil {
		out.Failure, out.Env = fmt.Sprintf("clear the check's copy: %v", err), envErr("clear the check's copy", err)
		return out
	}
	if err := repo.NewCopy(ctx, accept, commit); err != nil {
		out.Failure, out.Env = fmt.Sprintf("copy the attempt's result for its acceptance commands: %v", err), envErr("copy the attempt's result", err)
		return out
	}
	out.Failure, out.output, out.Env = w.runAcceptance(ctx, accept, t.Acceptance, true)
	if out.Failure != "" {
		if commit != base && out.Env == nil {
			if err := repo.KeepAttempt(ctx, runID, t.ID, n, commit); err != nil {
				w.opts.Logger.Warn("keep the attempt's result under its ref", "task", t.ID, "attempt", n, "err", err)
			} else {
				out.ref = checkpoint.AttemptRef(runID, t.ID, n)
			}
		}
		return out
	}
	cand.Passed = cand.Commands
	if j := w.opts.Judge; j != "" && j != "llm" {
		res, err := w.opts.Runtime.Exec(ctx, accept, j, w.opts.AcceptTime)
		if err != nil {
			out.Failure, out.Env = fmt.Sprintf("judge command %q could not run: %v", j, err), envErr("run the judge command", err)
			return out
		}
		cand.Judged, cand.JudgeOK = true, res.ExitCode == 0
		if score, ok := next.JudgeScore(res.Output); ok {
			cand.Score = &score
		}
		out.output += fmt.Sprintf("$ %s (judge)\n%s\n(exit %d)\n", j, tail(res.Output, acceptanceKept), res.ExitCode)
	}
	out.cand = cand
	return out
}

// diffLines is the lines a patch adds and removes.
func diffLines(patch string) int {
	n := 0
	for l := range strings.SplitSeq(patch, "\n") {
		if strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			n++
		}
	}
	return n
}

// onChecked records a check as it comes back to the loop: a passing
// attempt is held, on the record, before next hears of it (follow). The
// check of an attempt stopped when its task ended (endSeries) changes
// nothing but its copy, thrown away now it is no longer read, and where
// a failing result is kept: next does not hear of it.
func (r *run) onChecked(ev checked) (follow bool, err error) {
	r.underway.checkEnded()
	c := attempts.Check{Acceptance: ev.output, Ref: ev.ref}
	if !slices.Contains(r.series.Live(ev.ID), ev.Attempt) && r.attempts.Of(ev.ID, ev.Attempt).Status == runrecord.AttemptStopped {
		if ev.ref != "" {
			r.attempts.Kept(ev.ID, ev.Attempt, ev.ref)
		}
		r.dropAttemptCopy(ev.ID, ev.Attempt)
		return false, r.record(ev.ID)
	}
	if ev.Env != nil {
		// A fault of the machine: the attempt stays "checking", its copy
		// kept, for resume to check it again; the run halts.
		return true, r.attempts.Checked(ev.ID, ev.Attempt, c)
	}
	if err := r.series.Checked(ev.ID, ev.Attempt); err != nil {
		return false, err
	}
	c.Candidate = ev.cand
	if err := r.attempts.Checked(ev.ID, ev.Attempt, c); err != nil {
		return false, err
	}
	if ev.cand != nil {
		r.note(fmt.Sprintf("task %s: attempt %d passed its acceptance commands (%d lines changed): held until the task's attempts have ended", ev.ID, ev.Attempt, ev.cand.Diff))
	}
	if err := r.record(ev.ID); err != nil {
		return false, err
	}
	// Only once its result is on the record: a crash before finds the
	// copy there to check again.
	r.dropAttemptCopy(ev.ID, ev.Attempt)
	return true, nil
}

// endAttempt ends an attempt that did not pass; the task goes on.
func (r *run) endAttempt(a next.ActEndAttempt) error {
	key := r.key(a.ID, a.Attempt)
	r.bookUnreportedAttempt(a.ID, a.Attempt)
	r.underway.ended(key)
	info := r.info(a.ID)
	if err := r.series.Ended(a.ID, a.Attempt, a.Reason, info); err != nil {
		return err
	}
	r.dropAttemptCopy(a.ID, a.Attempt)
	r.traces.end(key, "failed")
	if err := r.attempts.Failed(a.ID, a.Attempt, oneLine(a.Reason, 500), true); err != nil {
		return err
	}
	info.History = append(info.History, fmt.Sprintf("attempt %d: failed: %s", a.Attempt, oneLine(a.Reason, 300)))
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID, TaskID: a.ID,
		Text: fmt.Sprintf("task %s: attempt %d failed: %s", a.ID, a.Attempt, oneLine(a.Reason, 200)),
		Data: map[string]any{"attempt": a.Attempt}})
	return r.record(a.ID)
}

// dropAttemptCopy throws attempt n's copy away (deleted when it was given
// up on: something may still write there).
func (r *run) dropAttemptCopy(id string, n int) {
	key := r.key(id, n)
	abandoned := r.underway.copyDropped(key)
	dir := r.o.opts.Layout.Attempt(r.st.RunID, id, n)
	remove := r.o.opts.Repo.RemoveCopy
	if abandoned {
		remove = r.o.opts.Repo.DiscardCopy
	}
	if err := remove(dir); err != nil {
		r.o.opts.Logger.Warn("remove the attempt's copy", "task", id, "dir", dir, "err", err)
	}
}

// stopAttempts stops task id's attempts still under way: a passing one
// won (first_pass_wins), or the budget stops them together. One being
// checked goes on: its check ends it, and it may yet be the next-ranked.
func (r *run) stopAttempts(ctx context.Context, a next.ActStopAttempts) error {
	var stopped []int
	for _, n := range r.series.Live(a.ID) {
		if r.underway.flight(r.key(a.ID, n)) == nil && r.attempts.Of(a.ID, n).Status == runrecord.AttemptChecking {
			continue
		}
		if err := r.stopAttempt(ctx, a.ID, n, a.Reason); err != nil {
			return err
		}
		stopped = append(stopped, n)
	}
	r.noteStopped(a.ID, a.Reason, stopped)
	return r.record(a.ID)
}

// endSeries ends task id's series with its task: an attempt still under
// way (one being checked when the winner was merged under
// first_pass_wins, or when the task failed) is stopped for why, so the
// record neither leaves it checking nor gives its span to another.
func (r *run) endSeries(ctx context.Context, id, why string) error {
	live := r.series.Live(id)
	for _, n := range live {
		if err := r.stopAttempt(ctx, id, n, why); err != nil {
			return err
		}
	}
	r.noteStopped(id, why, live)
	r.series.Finished(id)
	return nil
}

// stopAttempt stops attempt n of task id, under way, for why. A running
// one is abandoned in the runtime and its copy thrown away; one being
// checked keeps its copy until its check comes back (onChecked): the
// check may be reading it still.
func (r *run) stopAttempt(ctx context.Context, id string, n int, why string) error {
	key := r.key(id, n)
	f := r.underway.flight(key)
	if err := r.series.Stopped(id, n, why); err != nil {
		return err
	}
	if err := r.attempts.Stopped(id, n, why); err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	r.bookUnreportedAttempt(id, n)
	r.traces.end(key, "stopped")
	r.underway.gaveUp(key)
	if err := r.o.opts.Runtime.Abandon(ctx, id, f.Attempt); err != nil {
		r.o.opts.Logger.Warn("stop the attempt", "task", id, "attempt", n, "err", err)
	}
	r.dropAttemptCopy(id, n)
	return nil
}

// noteStopped tells the operator which of task id's attempts were stopped.
func (r *run) noteStopped(id, why string, stopped []int) {
	if len(stopped) == 0 {
		return
	}
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID, TaskID: id,
		Text: fmt.Sprintf("task %s: %s: attempts %v stopped", id, why, stopped), Data: map[string]any{"stopped": stopped}})
}

// choose ranks task id's held candidates and queues the best one not yet
// tried for the merge queue and its test gate.
func (r *run) choose(ctx context.Context, id string) error {
	info := r.info(id)
	var cs []next.Candidate
	for _, res := range info.Results {
		c := res.Candidate
		if c == nil || res.Attempt < info.Series.From || res.Status != runrecord.AttemptHeld && res.Status != runrecord.AttemptPassed {
			continue
		}
		nc := next.Candidate{Attempt: res.Attempt, Passed: c.Passed, Commands: c.Commands, Judged: c.Judged, JudgeOK: c.JudgeOK,
			DiffLines: c.Diff, CostUSD: res.Tokens.CostUSD, Tokens: res.Tokens.Prompt + res.Tokens.Completion, Finished: c.Finished}
		if c.Score != nil {
			nc.HasScore, nc.Score = true, *c.Score
		}
		cs = append(cs, nc)
	}
	ranked := next.Rank(cs)
	held := func(n int) bool { return r.attempts.Of(id, n).Status == runrecord.AttemptHeld }
	if r.o.opts.Judge == "llm" && r.o.opts.Reviewer != nil && !info.Series.Reviewed {
		if tied := tiedBest(ranked, held); len(tied) >= 2 {
			if err := r.startReview(ctx, id, tied); err != nil {
				return err
			}
			return r.record(id)
		}
	}
	if p := info.Series.Pick; p != 0 && held(p) {
		ranked = pickFirst(ranked, p)
	}
	winner := 0
	order := make([]int, len(ranked))
	for i, c := range ranked {
		order[i] = c.Attempt
		if winner == 0 && held(c.Attempt) {
			winner = c.Attempt
		}
	}
	if winner == 0 {
		return fmt.Errorf("orchestrator: task %s has no candidate left to merge", id)
	}
	if err := r.series.Chosen(id, winner); err != nil {
		return err
	}
	judgeReason := ""
	if winner == info.Series.Pick {
		judgeReason = info.Series.Reason
	}
	// Tried: the merge says whether it is the one.
	if err := r.attempts.Tried(id, winner, judgeReason); err != nil {
		return err
	}
	r.attempts.Ranked(id, order)
	cand := r.attempts.Of(id, winner).Candidate
	info.Attempt, info.Summary, info.Base = winner, cand.Summary, cand.Base
	r.note(fmt.Sprintf("task %s: attempts ranked %v: attempt %d goes to the merge", id, order, winner))
	t, _ := r.g.Get(id)
	sq := &squashing{done: make(chan struct{}), res: squashResult{commit: cand.Commit}}
	close(sq.done)
	r.underway.mergeQueued(mergeJob{id: id, subject: id + ": " + titleOf(t), body: cand.Summary,
		dir: r.o.opts.Layout.Attempt(r.st.RunID, id, winner), base: cand.Base,
		acceptance: t.Acceptance, attempt: winner, runID: r.st.RunID, squashed: sq})
	return r.record(id)
}

// completeSeries records the merged attempt of a task of several as its
// winner and keeps every other passing one under its ref.
func (r *run) completeSeries(ctx context.Context, id string) error {
	winner := r.info(id).Attempt
	if err := r.attempts.Completed(id, winner, true); err != nil {
		return err
	}
	for _, n := range r.attempts.Unkept(id) {
		if err := r.o.opts.Repo.KeepAttempt(ctx, r.st.RunID, id, n, r.attempts.Of(id, n).Candidate.Commit); err != nil {
			r.o.opts.Logger.Warn("keep the attempt's result under its ref", "task", id, "attempt", n, "err", err)
			continue
		}
		r.attempts.Kept(id, n, checkpoint.AttemptRef(r.st.RunID, id, n))
	}
	return r.endSeries(ctx, id, fmt.Sprintf("attempt %d was merged before its check ended", winner))
}

// requeueSeries puts a task whose series the budget stopped back to
// pending: its attempts stopped together are not counted against it, and
// its next dispatch (resume) starts a whole series afresh.
func (r *run) requeueSeries(a next.ActRequeue) error {
	info := r.info(a.ID)
	for _, res := range info.Results {
		if res.Attempt >= info.Series.From && res.Status == runrecord.AttemptStopped {
			if err := r.g.Refund(a.ID); err != nil {
				return err
			}
		}
	}
	r.series.Requeued(a.ID, info)
	info.History = append(info.History, a.Note)
	r.note(fmt.Sprintf("task %s: %s", a.ID, a.Note))
	if err := r.g.Fail(a.ID, a.Note); err != nil {
		return err
	}
	if err := r.g.Retry(a.ID); err != nil {
		return err
	}
	return r.save()
}

// tiedBest is the held candidates that rank equal with the best held one
// but for the finish time and the attempt number (next.Tied).
func tiedBest(ranked []next.Candidate, held func(int) bool) []next.Candidate {
	var out []next.Candidate
	for _, c := range ranked {
		if !held(c.Attempt) {
			continue
		}
		if len(out) > 0 && !next.Tied(out[0], c) {
			break
		}
		out = append(out, c)
	}
	return out
}

// pickFirst moves attempt p ahead of the candidates it is tied with.
func pickFirst(ranked []next.Candidate, p int) []next.Candidate {
	i := slices.IndexFunc(ranked, func(c next.Candidate) bool { return c.Attempt == p })
	if i <= 0 {
		return ranked
	}
	j := i
	for j > 0 && next.Tied(ranked[j-1], ranked[i]) {
		j--
	}
	out := slices.Clone(ranked)
	c := out[i]
	copy(out[j+1:i+1], out[j:i])
	out[j] = c
	return out
}

// reviewed is the LLM judge's answer about a task's tied candidates.
type reviewed struct {
	id      string
	verdict judge.Verdict
	err     error
}

// startReview asks the LLM judge, off the loop, which of the tied best
// candidates to merge; the task chooses nothing meanwhile.
func (r *run) startReview(ctx context.Context, id string, tied []next.Candidate) error {
	t, _ := r.g.Get(id)
	info := r.info(id)
	base := info.Series.Base
	commits := make(map[int]string, len(tied))
	for _, c := range tied {
		commits[c.Attempt] = r.attempts.Of(id, c.Attempt).Candidate.Commit
	}
	if err := r.series.UnderReview(id); err != nil {
		return err
	}
	r.underway.reviewStarted()
	r.offLoop.Go(func() {
		cs := make([]judge.Candidate, 0, len(tied))
		for _, c := range tied {
			diff, err := r.o.opts.Repo.Diff(ctx, base, commits[c.Attempt])
			if err != nil {
				r.send(reviewed{id: id, err: fmt.Errorf("the diff of attempt %d: %w", c.Attempt, err)})
				return
			}
			cs = append(cs, judge.Candidate{Attempt: c.Attempt, Diff: diff})
		}
		v, err := r.o.opts.Reviewer.Pick(ctx, judge.Task{ID: t.ID, Title: titleOf(t), Description: t.Description, Acceptance: t.Acceptance}, cs)
		r.send(reviewed{id: id, verdict: v, err: err})
	})
	return nil
}

// onReviewed records the LLM judge's pick and its reasoning (or why there
// is none: the deterministic order stands), once per series.
func (r *run) onReviewed(ev reviewed) error {
	r.underway.reviewEnded()
	r.spent.modelUsed(ev.verdict.Usage)
	info := r.info(ev.id)
	pick, reason := ev.verdict.Attempt, ev.verdict.Reason
	if ev.err != nil {
		pick, reason = 0, ""
	}
	if err := r.series.Reviewed(ev.id, info, pick, reason); err != nil {
		return err
	}
	if ev.err != nil {
		r.note(fmt.Sprintf("task %s: the LLM judge gave no usable pick (%s): the deterministic order stands", ev.id, oneLine(ev.err.Error(), 200)))
	} else {
		info.History = append(info.History, fmt.Sprintf("LLM judge picked attempt %d: %s", ev.verdict.Attempt, oneLine(ev.verdict.Reason, 300)))
		r.note(fmt.Sprintf("task %s: the LLM judge picked attempt %d among the tied: %s", ev.id, ev.verdict.Attempt, oneLine(ev.verdict.Reason, 200)))
	}
	return r.record(ev.id)
}
