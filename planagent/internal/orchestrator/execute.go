package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// apply carries out next's actions in order. Each state change is recorded
// before the side effect that depends on it, so a crash between the two is
// repaired by resume. The records are made durable by the caller, once for
// all the events it handles in a row, or earlier by a step that needs them
// on disk first (a dispatch syncs before its command is written).
//
// Dispatches in a row are done together, so their copies are made and
// their launches overlap; so are launches in a row.
func (r *run) apply(ctx context.Context, src event, acts []next.Action) error {
	for i := 0; i < len(acts); {
		if ids := together[next.ActDispatch](acts[i:], func(a next.ActDispatch) string { return a.ID }); len(ids) > 0 {
			i += len(ids)
			if err := r.dispatch(ctx, ids...); err != nil {
				return err
			}
			continue
		}
		if ids := together[next.ActLaunch](acts[i:], func(a next.ActLaunch) string { return a.ID }); len(ids) > 0 {
			i += len(ids)
			if err := r.launchAll(ctx, ids...); err != nil {
				return err
			}
			continue
		}
		if err := r.do(ctx, src, acts[i]); err != nil {
			return err
		}
		i++
	}
	return nil
}

// together is the ids of the actions of type A at the start of acts.
func together[A next.Action](acts []next.Action, id func(A) string) []string {
	var ids []string
	for _, a := range acts {
		x, ok := a.(A)
		if !ok {
			break
		}
		ids = append(ids, id(x))
	}
	return ids
}

// do carries out one action about the event src: a dispatch to the small
// function that does it.
func (r *run) do(ctx context.Context, src event, a next.Action) error {
	switch a := a.(type) {
	case next.ActDispatch:
		return r.dispatch(ctx, a.ID)
	case next.ActLaunch:
		return r.launchAll(ctx, a.ID)
	case next.ActHalt:
		return r.halt(a)
	case next.ActPutBack:
		return r.putBack(a)
	case next.ActRecord:
		rep, ok := src.(reported)
		if !ok || rep.ID != a.ID {
			return fmt.Errorf("orchestrator: record %s's report after %T", a.ID, src)
		}
		r.recordReport(a.ID, keyOr(a.Key, a.ID), rep.Report)
	case next.ActCheck:
		return r.startCheck(ctx, a.ID, a.Attempt)
	case next.ActEndAttempt:
		return r.endAttempt(a)
	case next.ActChoose:
		return r.choose(ctx, a.ID)
	case next.ActStopAttempts:
		return r.stopAttempts(ctx, a)
	case next.ActAccept:
		r.startAcceptance(ctx, a.ID)
	case next.ActMerge:
		r.enqueueMerge(ctx, a.ID)
	case next.ActStartMerge:
		return r.startMerge(ctx, a)
	case next.ActRemerge:
		return r.underway.remerge(a.ID)
	case next.ActDropStaleReport:
		r.dropStaleReport(a)
	case next.ActStopWaiting:
		r.underway.ended(a.ID)
	case next.ActFreeClaim:
		r.freeClaim(a.ID)
	case next.ActNoteLateDeath:
		r.o.opts.Logger.Info("an earlier attempt's agent ended", "task", a.ID, "attempt", a.Attempt, "err", a.Cause)
	case next.ActAbandon:
		r.abandon(ctx, a)
	case next.ActStopSilentWatcher:
		r.stopSilentWatcher(ctx, a)
	case next.ActComplete:
		return r.complete(ctx, a)
	case next.ActResend:
		return r.resend(ctx, a)
	case next.ActRelaunch:
		id, n := r.attemptOf(a.ID)
		r.gate.opened(attempt.Name(id, n), r.taskBudget(id))
		return r.launch(ctx, id, n, a.ID)
	case next.ActFinishMerge:
		return r.finishMerge(ctx, a)
	case next.ActForgetMerge:
		r.forgetMerge(a)
	case next.ActFail:
		return r.fail(ctx, a)
	case next.ActAsk:
		r.startDecision(ctx, a)
	case next.ActDecide:
		return r.decide(a)
	case next.ActRetry:
		return r.retry(a)
	case next.ActRequeue:
		return r.requeue(a)
	case next.ActReplan:
		d, ok := src.(decided)
		if !ok || d.ID != a.ID {
			return fmt.Errorf("orchestrator: replan after %T", src)
		}
		return r.replan(d.tasks)
	case next.ActAbort:
		r.underway.abort()
	case next.ActStopConfig:
		return r.stopConfig(a)
	case next.ActRestart:
		return r.restart(ctx, a)
	case next.ActNoteBudget:
		r.noteBudget(a)
	case next.ActFinish:
		return r.finish(ctx, a)
	default:
		return fmt.Errorf("orchestrator: unknown action %T", a)
	}
	return nil
}

// dropStaleReport ignores a report of an earlier run or attempt, saying
// so once.
func (r *run) dropStaleReport(a next.ActDropStaleReport) {
	if f := r.underway.flight(a.ID); f != nil && !f.warned {
		r.o.opts.Logger.Warn("ignoring a stale report", "file", r.o.opts.Layout.ReportFile(a.ID), "run", a.RunID, "attempt", a.Attempt, "want_attempt", a.Want)
		f.warned = true
	}
}

// abandon stops what works on a timed-out attempt: it must not write into
// a copy that is about to be thrown away (and recycled for another
// attempt). The time-out comes back to the loop as an event.
func (r *run) abandon(ctx context.Context, a next.ActAbandon) {
	key := keyOr(a.Key, a.ID)
	r.bookUnreported(a.ID)
	n := r.info(a.ID).Attempt
	if f := r.underway.gaveUp(key); f != nil {
		n = f.Attempt
	}
	if err := r.o.opts.Runtime.Abandon(ctx, a.ID, n); err != nil {
		r.o.opts.Logger.Warn("stop the timed-out attempt", "task", a.ID, "err", err)
	}
	ev := next.EvTimedOut{ID: a.ID, Key: a.Key}
	if a.Key != "" {
		ev.Attempt = n
	}
	r.outcomes = append(r.outcomes, ev)
}

// keyOr is a flight's key, "" meaning the task's id.
func keyOr(key, id string) string {
	if key != "" {
		return key
	}
	return id
}

// stopSilentWatcher stops what the runtime started, so a frozen watcher
// cannot come back and run the re-dispatched tasks a second time; the
// tasks it held come back to the loop as its death.
func (r *run) stopSilentWatcher(ctx context.Context, a next.ActStopSilentWatcher) {
	if err := r.o.opts.Runtime.Stop(context.WithoutCancel(ctx)); err != nil {
		r.o.opts.Logger.Warn("stop the silent coding agent", "err", err)
	}
	cause := fmt.Errorf("no watcher heartbeat in %s for %s", r.o.opts.Layout.Watchers(), a.Silent)
	r.outcomes = append(r.outcomes, r.agentDied(attempt.Exit{Err: cause}))
}

// freeClaim frees a dead agent's claim on a task, so the command of its
// next attempt is taken afresh. Through the root: commands/ is the agents'
// to write, and a .claimed planted as a link to a host dir must not have
// <id>.md removed there.
func (r *run) freeClaim(id string) {
	l := r.o.opts.Layout
	for _, p := range []string{l.ClaimFile(id), l.OwnerFile(id)} {
		_ = r.root.RemoveAll(p)
	}
}

// recordReport books a report's summary, files, tokens and time on its
// task, whose attempt is no longer in flight.
func (r *run) recordReport(id, key string, rep *protocol.Report) {
	n := rep.Attempt
	if f := r.underway.ended(key); f != nil && key != id {
		// An attempt's own file: its number is the flight's, whatever a
		// watcher that retook its command counted.
		n = f.Attempt
	}
	info := r.info(id)
	summary := "" // one at a time the task's summary is its attempt's
	if key == id {
		info.Attempt = n
	} else {
		r.traces.end(key, string(rep.Status)) // its agent is done; its check is not the agent's
		summary = rep.Summary
	}
	info.Summary = rep.Summary
	info.FilesChanged = rep.FilesChanged
	info.Tokens.Add(rep.Tokens)
	for _, s := range rep.Subagents {
		info.Subagents = append(info.Subagents, runrecord.Subagent{Attempt: n, ID: s.ID, Goal: s.Goal, Tokens: s.Tokens})
	}
	r.spent.agentUsed(rep.Tokens)
	r.gate.sync(r.spent.booked())
	info.Duration += time.Duration(rep.Duration)
	r.attempts.Reported(id, n, summary, rep.Tokens, time.Duration(rep.Duration))
	info.Reason = rep.Reason
	r.noteEgress(id, n)
}

// complete moves the workspace to the task's merged result (with
// checkpoints) and marks the task completed. A result that cannot reach
// the workspace is not the task's fault: it comes back to the loop as a
// failed merge, for the decision step.
func (r *run) complete(ctx context.Context, a next.ActComplete) error {
	if a.Commit != "" {
		if err := r.integrate(ctx, a.ID, a.Commit); err != nil {
			var ug *userGitError
			if errors.As(err, &ug) {
				return err // the run stops, resumably: the user's git work comes first
			}
			ev := next.EvMerged{ID: a.ID, Failure: fmt.Sprintf("update the workspace with the merged result: %v", err)}
			if envfault.Is(err) {
				ev.Env = fmt.Errorf("update the workspace with the merged result: %w", err)
			}
			r.outcomes = append(r.outcomes, ev)
			return nil
		}
	}
	info := r.info(a.ID)
	if r.several(a.ID) {
		// Its copy went with its check; the others are kept as refs.
		if err := r.completeSeries(ctx, a.ID); err != nil {
			return err
		}
	} else {
		r.recycleCopy(ctx, a.ID)
		if err := r.attempts.Completed(a.ID, info.Attempt, false); err != nil {
			return err
		}
	}
	info.Acceptance = a.Acceptance
	r.checkpointed(info)
	info.History = append(info.History, fmt.Sprintf("attempt %d: completed: %s", info.Attempt, oneLine(a.Summary, 300)))
	if err := r.g.Complete(a.ID, oneLine(a.Summary, 500)); err != nil {
		return err
	}
	r.end(a.ID, "completed")
	if err := r.record(a.ID); err != nil {
		return err
	}
	return r.afterReport(a.ID)
}

// fail marks the task failed (its dependants are skipped) and notes why.
func (r *run) fail(ctx context.Context, a next.ActFail) error {
	r.bookUnreported(a.ID) // an attempt that died or timed out used what the gateway counted
	info := r.info(a.ID)
	if r.several(a.ID) {
		// Its attempts ended one by one (endAttempt), but for one still
		// being checked; the series ends here.
		if err := r.endSeries(ctx, a.ID, "its task failed before its check ended"); err != nil {
			return err
		}
	} else {
		r.dropCopy(a.ID)
		info.History = append(info.History, fmt.Sprintf("attempt %d: failed: %s", info.Attempt, oneLine(a.Reason, 300)))
		if err := r.attempts.Failed(a.ID, info.Attempt, oneLine(a.Reason, 500), false); err != nil {
			return err
		}
	}
	if err := r.g.Fail(a.ID, a.Reason); err != nil {
		return err
	}
	r.issues = append(r.issues, fmt.Sprintf("%s failed: %s", a.ID, oneLine(a.Reason, 200)))
	r.end(a.ID, "failed")
	if err := r.save(); err != nil {
		return err
	}
	return r.afterReport(a.ID)
}

// decide records a decision about a failed task and tells the operator.
func (r *run) decide(a next.ActDecide) error {
	r.st.Decisions = append(r.st.Decisions, runrecord.Decision{Time: r.o.opts.Now(), Task: a.ID, Action: string(a.Action), Reason: a.Reason, Hints: a.Hints})
	r.o.opts.Events.Emit(events.Event{Type: events.Decision, RunID: r.st.RunID, TaskID: a.ID, Status: string(a.Action),
		Text: a.Reason, Data: map[string]any{"hints": a.Hints, "invalid": a.Invalid}})
	return r.record()
}

// retry puts a failed task back to pending with hints for its next attempt.
func (r *run) retry(a next.ActRetry) error {
	if err := r.g.Retry(a.ID); err != nil {
		return err
	}
	r.info(a.ID).Hints = a.Hints
	return r.save()
}

// requeue sends a task again whose attempt ended through no fault of its own.
func (r *run) requeue(a next.ActRequeue) error {
	if r.several(a.ID) && r.info(a.ID).Series != nil {
		return r.requeueSeries(a)
	}
	r.bookUnreported(a.ID)
	r.dropCopy(a.ID)
	info := r.info(a.ID)
	info.History = append(info.History, fmt.Sprintf("attempt %d: %s", info.Attempt, a.Note))
	if err := r.attempts.Interrupted(a.ID, info.Attempt, oneLine(a.Note, 500)); err != nil {
		return err
	}
	r.traces.end(a.ID, "interrupted")
	if err := r.g.Fail(a.ID, a.Note); err != nil {
		return err
	}
	if err := r.g.Retry(a.ID); err != nil {
		return err
	}
	return r.save()
}

// putBack sends a task again, its attempt not counted, whose attempt a
// fault of the machine ended; the run halts right after (ActHalt), so the
// task waits, pending, for the resume.
func (r *run) putBack(a next.ActPutBack) error {
	if err := r.requeue(next.ActRequeue(a)); err != nil {
		return err
	}
	if err := r.g.Refund(a.ID); err != nil {
		return err
	}
	return r.save()
}

// halt ends the run on err, resumable. A fault of the machine says what to
// fix before the resume that redoes the tasks it stopped.
func (r *run) halt(a next.ActHalt) error {
	if !envfault.Is(a.Err) {
		return a.Err
	}
	return fmt.Errorf("%w: %s, then continue with `planagent resume %s`", a.Err, envfault.Hint(a.Err), r.st.RunID)
}

// replan replaces every unfinished task (the tasks were validated on a
// clone before next saw the verdict).
func (r *run) replan(tasks []taskgraph.Task) error {
	if err := r.g.Replace(tasks); err != nil {
		return fmt.Errorf("replan: %w", err)
	}
	for _, t := range r.g.Tasks() {
		r.info(t.ID)
	}
	return r.save()
}

// stopConfig stops dispatching because of a configuration error the agent met.
func (r *run) stopConfig(a next.ActStopConfig) error {
	if r.st.ConfigError == "" {
		r.st.ConfigError = a.Reason
	}
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID,
		Text: "configuration error: " + a.Reason + ": no new task starts"})
	return r.save()
}

// restart starts a fresh shared watcher after the old one died.
func (r *run) restart(ctx context.Context, a next.ActRestart) error {
	r.o.opts.Logger.Warn("the coding agent died; retrying its tasks on a fresh one", "err", a.Cause)
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID, Text: fmt.Sprintf("coding agent died: %v", a.Cause)})
	if err := r.o.opts.Runtime.Start(ctx); err != nil {
		return fmt.Errorf("restart the coding agent: %w", err)
	}
	return nil
}

// noteBudget tells the operator, once, that a budget is reached.
func (r *run) noteBudget(a next.ActNoteBudget) {
	r.spent.budgetNoted()
	r.o.opts.Logger.Info("budget reached: no new task starts", "why", a.Reason)
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID,
		Text: a.Reason + ": no new task starts; the run pauses once the tasks in flight finish"})
}

// finish ends the run with its status and why it stopped.
func (r *run) finish(ctx context.Context, a next.ActFinish) error {
	r.st.Status, r.st.Paused = runrecord.RunStatus(a.Status), a.Paused
	r.st.Stop = stopOf(r.st, r.st.Status, r.budgetHit(), r.g.Tasks())
	r.done = true
	r.clearAttempts(ctx)
	return r.save()
}

// startAcceptance runs the task's acceptance commands off the loop, so the
// other tasks' reports are handled meanwhile; the result comes back as
// next.EvAccepted. ctx cancels it (Ctrl-C).
func (r *run) startAcceptance(ctx context.Context, id string) {
	t, _ := r.g.Get(id)
	summary := r.info(id).Summary
	r.underway.acceptStarted()
	r.offLoop.Go(func() {
		failure, output, env := r.work.accept(ctx, t)
		r.send(next.EvAccepted{ID: id, Failure: failure, Summary: summary, Output: output, Env: env})
	})
}

// accept runs the acceptance commands in the shared workspace (a run
// without checkpoints); "" means all passed.
func (w *worker) accept(ctx context.Context, t taskgraph.Task) (failure, output string, env error) {
	return w.runAcceptance(ctx, w.opts.Layout.Workspace(), t.Acceptance, false)
}

// runAcceptance runs commands in dir through the runtime; failure "" means
// all passed. output is what each command printed (its tail), for the
// person reviewing the task. In a copy made for them (isolated), the run's
// setup command runs first, as it did before the agent: the copy holds
// only what git tracks and the included ignored files. env is a command
// that could not run for a fault of the machine (a full disk, the engine
// gone): not the task's failure.
func (w *worker) runAcceptance(ctx context.Context, dir string, commands []string, isolated bool) (failure, output string, env error) {
	var out strings.Builder
	type step struct{ command, what string }
	var steps []step
	if setup := w.opts.SetupCommand; setup != "" && isolated {
		steps = append(steps, step{setup, "setup command"})
	}
	for _, c := range commands {
		steps = append(steps, step{c, "acceptance command"})
	}
	for _, s := range steps {
		timeout := w.opts.AcceptTime
		if s.what == "setup command" {
			timeout = w.opts.TaskTimeout
		}
		res, err := w.opts.Runtime.Exec(ctx, dir, s.command, timeout)
		if err != nil {
			failure = fmt.Sprintf("%s %q could not run: %v", s.what, s.command, err)
			if envfault.Is(err) {
				env = fmt.Errorf("%s %q could not run: %w", s.what, s.command, err)
			}
			return failure, out.String(), env
		}
		printed := tail(res.Output, acceptanceKept)
		fmt.Fprintf(&out, "$ %s\n%s", s.command, printed)
		if printed != "" && !strings.HasSuffix(printed, "\n") {
			out.WriteString("\n")
		}
		fmt.Fprintf(&out, "(exit %d)\n", res.ExitCode)
		if res.ExitCode != 0 {
			failure = fmt.Sprintf("%s %q exited %d: %s", s.what, s.command, res.ExitCode, tail(res.Output, 1500))
			// A command that failed on a full disk (npm install, go
			// build) says so in its last lines: the machine's fault.
			if envfault.InText(tail(res.Output, 1500)) {
				env = fmt.Errorf("%s %q exited %d on a full disk: %s", s.what, s.command, res.ExitCode, lastLine(res.Output, "no space left on device", "disk quota exceeded"))
			}
			return failure, out.String(), env
		}
	}
	return "", out.String(), nil
}

// acceptanceKept is how much of each acceptance command's output a task
// keeps for its review.
const acceptanceKept = 4000

// startDecision asks the decider about a failed task off the loop; the
// answer comes back as decided. ctx cancels the call (Ctrl-C).
func (r *run) startDecision(ctx context.Context, a next.ActAsk) {
	t, _ := r.g.Get(a.ID) // failed by the action before
	f := Failure{Task: t, Error: a.Error, PlanSummary: a.PlanSummary, AttemptsLeft: a.AttemptsLeft}
	r.underway.decideStarted()
	r.offLoop.Go(func() {
		v := r.o.opts.Decider.Decide(ctx, f)
		r.send(decided{ID: f.Task.ID, Verdict: v})
	})
}

// send hands an off-loop result to the loop, or drops it once Drive has
// returned (the run was interrupted; resume redoes the work).
func (r *run) send(ev event) {
	select {
	case r.results <- ev:
	case <-r.stopped:
	}
}

// lastLine is the last line of out that holds one of texts (any case), for
// the one-line error that names it.
func lastLine(out string, texts ...string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.ToLower(lines[i])
		for _, t := range texts {
			if strings.Contains(l, t) {
				return strings.TrimSpace(lines[i])
			}
		}
	}
	return ""
}
