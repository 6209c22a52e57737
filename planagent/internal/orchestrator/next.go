package orchestrator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The run is a loop of event → next → actions. next is the one place that
// decides what happens; it reads the graph and the run's bookkeeping and
// does no I/O, so every rule (retry budget, acceptance, decisions, when the
// run ends) is table-tested in next_test.go. The executor (execute.go)
// carries the actions out; slow work (acceptance commands, asking the
// decider) runs off the loop and comes back as events.

// event is something that happened to the run.
type event interface{ isEvent() }

// evSettle follows every other event: start what can start, or end the run.
type evSettle struct{}

// evReport: the report of the attempt in flight arrived.
type evReport struct {
	ID     string
	Report *protocol.Report
}

// evBadReport: the report of the attempt in flight cannot be read.
type evBadReport struct {
	ID  string
	Err error
}

// evAccepted: the acceptance commands finished; Failure is "" when all
// passed. Summary is the agent's, from its report.
type evAccepted struct {
	ID, Failure, Summary string
	Output               string // what the acceptance commands printed
}

// evDecided: the decider answered about a failed task.
type evDecided struct {
	ID      string
	Verdict Verdict
}

// evMerged: the merge queue is done with a completed attempt. Candidate is
// the integration state with the attempt applied (Changed says whether it
// differs); Conflict names the files that clashed with work merged since
// the attempt's copy was made; Failure is a failed commit, merge or
// acceptance command.
type evMerged struct {
	ID, Candidate, Failure, Summary string
	Acceptance                      string // what the acceptance commands printed
	Changed                         bool
	Conflict                        []string
}

// evTimedOut: a task next gave up on (actAbandon) is abandoned: what
// worked on it is stopped.
type evTimedOut struct{ ID string }

// evTick: the clock ticked. Now is the clock's time; Heartbeat is when the
// newest watcher heartbeat was written (zero: there is none).
type evTick struct{ Now, Heartbeat time.Time }

// evAgentDied: the agent running these tasks died before reporting. Shared
// means the one watcher serving every task died, so it must be restarted.
type evAgentDied struct {
	IDs    []string
	Cause  error
	Shared bool
}

func (evSettle) isEvent()    {}
func (evReport) isEvent()    {}
func (evBadReport) isEvent() {}
func (evAccepted) isEvent()  {}
func (evDecided) isEvent()   {}
func (evTimedOut) isEvent()  {}
func (evMerged) isEvent()    {}
func (evAgentDied) isEvent() {}
func (evTick) isEvent()      {}

// action is one thing the executor does.
type action interface{ isAction() }

// actDispatch starts a pending task's next attempt.
type actDispatch struct{ ID string }

// actRecord books a report's summary, files, tokens and time on the task.
type actRecord struct {
	ID     string
	Report *protocol.Report
}

// actAccept runs the task's acceptance commands (off the loop) → evAccepted.
type actAccept struct{ ID string }

// actMerge queues a completed attempt for the merge.
type actMerge struct{ ID string }

// actStartMerge starts the merge of the merge queue's first attempt (off
// the loop) → evMerged.
type actStartMerge struct{ ID string }

// actDropStaleReport ignores a report left by an earlier run or an earlier
// attempt (Attempt) of the task, whose attempt Want is in flight.
type actDropStaleReport struct {
	ID, RunID     string
	Attempt, Want int
}

// actStopWaiting stops waiting for the attempt in flight, whose report
// cannot be read.
type actStopWaiting struct{ ID string }

// actAbandon gives up on an attempt in flight past its deadline: what
// still works on it is stopped before its copy is thrown away → evTimedOut.
type actAbandon struct{ ID string }

// actStopSilentWatcher stops the watcher whose heartbeat went stale while
// tasks waited on it for longer than the heartbeat timeout (Silent): a
// frozen watcher must not come back and run them a second time. The tasks
// it held come back as evAgentDied.
type actStopSilentWatcher struct{ Silent time.Duration }

// actComplete marks the task completed; with checkpoints, Commit is the
// merged state the integration branch moves to first.
type actComplete struct{ ID, Summary, Commit, Acceptance string }

// actFail marks the task failed (its dependants are skipped) and notes why.
type actFail struct{ ID, Reason string }

// actAsk asks the decider (off the loop) about a failure → evDecided.
type actAsk struct{ Failure Failure }

// actRetry sends a failed task again; Hints reach the next attempt.
type actRetry struct {
	ID    string
	Hints []string
}

// actRequeue sends a task again whose attempt ended through no fault of its
// own (the agent was interrupted or died), without asking anyone.
type actRequeue struct{ ID, Note string }

// actReplan replaces every unfinished task with Tasks (validated by next).
type actReplan struct{ Tasks []taskgraph.Task }

// actAbort stops dispatching: the run ends once nothing is in flight.
type actAbort struct{}

// actStopConfig stops dispatching because of a configuration error the
// agent met (State.ConfigError): the run pauses once nothing is in flight,
// and planagent exits 2 with Reason.
type actStopConfig struct{ Reason string }

// actDecide records a decision about a failed task and tells the operator.
type actDecide struct {
	ID              string
	Action          Choice
	Reason, Invalid string
	Hints           []string
}

// actRestart starts a fresh shared watcher after the old one died.
type actRestart struct{ Cause error }

// actNoteBudget tells the operator, once, that a budget is reached.
type actNoteBudget struct{ Reason string }

// actFinish ends the run with Status; Paused says which budget paused it.
type actFinish struct {
	Status runrecord.RunStatus
	Paused string
}

func (actDispatch) isAction()          {}
func (actRecord) isAction()            {}
func (actAccept) isAction()            {}
func (actMerge) isAction()             {}
func (actStartMerge) isAction()        {}
func (actDropStaleReport) isAction()   {}
func (actStopWaiting) isAction()       {}
func (actAbandon) isAction()           {}
func (actStopSilentWatcher) isAction() {}
func (actComplete) isAction()          {}
func (actFail) isAction()              {}
func (actAsk) isAction()               {}
func (actRetry) isAction()             {}
func (actRequeue) isAction()           {}
func (actReplan) isAction()            {}
func (actAbort) isAction()             {}
func (actStopConfig) isAction()        {}
func (actDecide) isAction()            {}
func (actRestart) isAction()           {}
func (actNoteBudget) isAction()        {}
func (actFinish) isAction()            {}

// view is what next reads: the graph and what is under way. next never
// changes it.
type view struct {
	g          *taskgraph.Graph
	running    int  // attempts waiting for their report
	accepting  int  // tasks finished but waiting for their acceptance or merge (queued or under way)
	deciding   int  // decider calls under way
	isolated   bool // attempts work in copies and are merged (a run with checkpoints)
	aborted    bool
	parallel   int
	maxRetries int
	decider    bool // a decider is configured; without one the rules below decide
	// budget names the run budget that is reached ("" while none is): no
	// new task starts, and once nothing is under way the run pauses.
	budget string
	// budgetNew: the budget was found reached and not yet announced.
	budgetNew bool
	runID     string
	// flights are the attempts waiting for their report, by task.
	flights map[string]flightTimes
	// heartbeatTimeout: with a task waiting this long and no watcher
	// heartbeat this fresh, the watcher is taken for dead.
	heartbeatTimeout time.Duration
	// mergeNext is the first attempt in the merge queue ("" when it is
	// empty); merging says a merge is under way.
	mergeNext string
	merging   bool
}

// flightTimes is what next knows of an attempt in flight.
type flightTimes struct {
	attempt  int
	launched time.Time // when its command went out: the heartbeat check waits from here
	deadline time.Time // no report by then: it is abandoned
}

// spareAttempts is how many attempts beyond --max-retries a task gets for
// interruptions and agent deaths, which are not its fault; a task that kills
// every agent it runs on still ends.
const spareAttempts = 2

// attemptsLeft is the one retry budget: how many more attempts a task may
// have after its last one ended, for a failure of its own (spare false) or
// through no fault of its own (spare true).
func attemptsLeft(t taskgraph.Task, maxRetries int, spare bool) int {
	limit := maxRetries + 1 + t.Granted
	if spare {
		limit += spareAttempts
	}
	return limit - t.Attempts
}

// next decides what to do about ev.
func next(v view, ev event) []action {
	switch ev := ev.(type) {
	case evSettle:
		return settle(v)
	case evReport:
		return onReport(v, ev)
	case evBadReport:
		return append([]action{actStopWaiting{ID: ev.ID}}, failure(v, ev.ID, fmt.Sprintf("unreadable report: %v", ev.Err))...)
	case evAccepted:
		if ev.Failure != "" {
			return failure(v, ev.ID, ev.Failure)
		}
		return []action{actComplete{ID: ev.ID, Summary: ev.Summary, Acceptance: ev.Output}}
	case evMerged:
		return onMerged(v, ev)
	case evTimedOut:
		return failure(v, ev.ID, "no report within the task timeout")
	case evAgentDied:
		return onDeath(v, ev)
	case evDecided:
		return onVerdict(v, ev.ID, ev.Verdict)
	case evTick:
		return onTick(v, ev)
	}
	panic(fmt.Sprintf("orchestrator: unknown event %T", ev))
}

// settle dispatches ready tasks up to the parallel limit; with nothing left
// to wait for, it ends the run. Nothing starts while the decider is asked:
// its answer may replace the unfinished tasks or stop the run.
//
// The limit counts every task in flight: running, and finished but waiting
// for its acceptance or its merge. Such a task still holds its attempt copy
// (and, with acceptance, a container): counting only the running ones let
// a 100-task fan-out at --parallel 4 pile up 91 unmerged tasks and 50 copies.
func settle(v view) []action {
	var out []action
	if v.budgetNew {
		out = append(out, actNoteBudget{Reason: v.budget})
	}
	started := false
	if !v.aborted && v.deciding == 0 && v.budget == "" {
		for _, id := range v.g.ReadyN(v.parallel - v.running - v.accepting) {
			out, started = append(out, actDispatch{ID: id}), true
		}
	}
	// The merge queue: one merge at a time, in completion order, each onto
	// the state the previous one left.
	if v.mergeNext != "" && !v.merging {
		out = append(out, actStartMerge{ID: v.mergeNext})
	}
	if started || v.running > 0 || v.accepting > 0 || v.deciding > 0 {
		return out
	}
	status := runrecord.RunFailed
	switch {
	case v.aborted:
		status = runrecord.RunAborted
	case v.budget != "" && !v.g.Done():
		return append(out, actFinish{Status: runrecord.RunPaused, Paused: v.budget})
	case v.g.Counts()[taskgraph.Completed] == len(v.g.Tasks()):
		status = runrecord.RunCompleted
	}
	return append(out, actFinish{Status: status})
}

// onTick abandons the attempts past their deadline, then takes the watcher
// for dead when its heartbeat went stale while tasks waited on it. Exited
// does not cover that: a compose watcher planagent did not start, or a
// frozen process, never reports there. Only a task launched at least the
// heartbeat timeout ago counts: the container of one just launched (or a
// watcher just started) may not have beaten yet, and the previous
// attempt's container took its heartbeat away when it exited.
func onTick(v view, ev evTick) []action {
	var out []action
	since := ev.Now.Add(-v.heartbeatTimeout)
	waited := false
	for _, id := range slices.Sorted(maps.Keys(v.flights)) {
		f := v.flights[id]
		if ev.Now.After(f.deadline) {
			out = append(out, actAbandon{ID: id})
			continue
		}
		if !f.launched.After(since) {
			waited = true
		}
	}
	if waited && ev.Heartbeat.Before(since) {
		out = append(out, actStopSilentWatcher{Silent: v.heartbeatTimeout})
	}
	return out
}

func onReport(v view, ev evReport) []action {
	// A watcher that retakes the command of a dead one bumps the attempt,
	// so a later attempt of this run is the answer; an earlier one is stale.
	if want := v.flights[ev.ID].attempt; ev.Report.RunID != v.runID || ev.Report.Attempt < want {
		return []action{actDropStaleReport{ID: ev.ID, RunID: ev.Report.RunID, Attempt: ev.Report.Attempt, Want: want}}
	}
	rec := actRecord(ev)
	t, _ := v.g.Get(ev.ID)
	switch ev.Report.Status {
	case protocol.StatusCompleted:
		if v.isolated {
			return []action{rec, actMerge{ID: ev.ID}}
		}
		if len(t.Acceptance) > 0 {
			return []action{rec, actAccept{ID: ev.ID}}
		}
		return []action{rec, actComplete{ID: ev.ID, Summary: ev.Report.Summary}}
	case protocol.StatusInterrupted:
		// The watcher was stopped mid-task: nothing is wrong with the task.
		if attemptsLeft(t, v.maxRetries, true) > 0 {
			return []action{rec, actRequeue{ID: ev.ID, Note: "interrupted"}}
		}
		return append([]action{rec}, failure(v, ev.ID, "interrupted too many times")...)
	default:
		msg := ev.Report.Error
		if msg == "" {
			msg = ev.Report.Summary
		}
		if ev.Report.Reason == protocol.ReasonConfig {
			// The model server cannot serve the agent as configured: every
			// task would fail the same way, so no task starts and the run
			// pauses (exit 2). The task waits, pending, for a resume once
			// the server is fixed: nothing was wrong with it.
			return []action{rec, actRequeue{ID: ev.ID, Note: "stopped by a configuration error: " + msg}, actStopConfig{Reason: msg}}
		}
		if ev.Report.Reason == protocol.ReasonBudget {
			// The decider hears it was the budget, not the work, that ended it.
			return append([]action{rec}, failure(v, ev.ID, "budget: the agent passed the task's token budget: "+msg)...)
		}
		return append([]action{rec}, failure(v, ev.ID, "the agent reported failure: "+msg)...)
	}
}

// onMerged completes a merged attempt; a conflict sends the task again on
// the new base (an attempt of its budget), naming the files.
func onMerged(v view, ev evMerged) []action {
	switch {
	case len(ev.Conflict) > 0:
		t, _ := v.g.Get(ev.ID)
		files := strings.Join(ev.Conflict, ", ")
		reason := "merge conflict in " + files + " with work merged since the attempt started"
		if attemptsLeft(t, v.maxRetries, false) <= 0 {
			return failure(v, ev.ID, reason)
		}
		hint := "Your previous attempt conflicted with changes merged meanwhile in " + files +
			": this attempt starts from the current state; read those files again and make your change on top of them."
		return []action{actFail{ID: ev.ID, Reason: reason},
			actDecide{ID: ev.ID, Action: Retry, Reason: reason + "; redone on the new base", Hints: []string{hint}},
			actRetry{ID: ev.ID, Hints: []string{hint}}}
	case ev.Failure != "":
		return failure(v, ev.ID, ev.Failure)
	}
	a := actComplete{ID: ev.ID, Summary: ev.Summary, Acceptance: ev.Acceptance}
	if ev.Changed {
		a.Commit = ev.Candidate
	}
	return []action{a}
}

func onDeath(v view, ev evAgentDied) []action {
	var out []action
	for _, id := range ev.IDs {
		t, _ := v.g.Get(id)
		if attemptsLeft(t, v.maxRetries, true) > 0 {
			out = append(out, actRequeue{ID: id, Note: fmt.Sprintf("the coding agent died (%v)", ev.Cause)})
			continue
		}
		out = append(out, failure(v, id, fmt.Sprintf("the coding agent died %d times while running it; last: %v", t.Attempts, ev.Cause))...)
	}
	if ev.Shared {
		out = append(out, actRestart{Cause: ev.Cause})
	}
	return out
}

// failure fails the task, then asks the decider, or without one retries
// while attempts are left.
func failure(v view, id, reason string) []action {
	t, _ := v.g.Get(id)
	left := attemptsLeft(t, v.maxRetries, false)
	out := []action{actFail{ID: id, Reason: reason}}
	if v.decider {
		// The graph's copy of the task does not carry the new error yet.
		t.Status, t.Error = taskgraph.Failed, reason
		return append(out, actAsk{Failure: Failure{Task: t, Error: reason, PlanSummary: v.g.Summary(), AttemptsLeft: left}})
	}
	if left > 0 {
		return append(out, actDecide{ID: id, Action: Retry, Reason: "attempts left"}, actRetry{ID: id})
	}
	return append(out, actDecide{ID: id, Action: Continue, Reason: "retries exhausted (--max-retries)"})
}

// onVerdict turns the decider's answer into actions, holding it to the
// rules: no retry past the budget, a replan that validates like a plan.
func onVerdict(v view, id string, vd Verdict) []action {
	t, _ := v.g.Get(id)
	if t.Status != taskgraph.Failed {
		return nil // a replan or abort already dealt with it
	}
	reason := vd.Reason
	if reason == "" && vd.Invalid != "" {
		reason = "the decision was unusable: " + vd.Invalid
	}
	d := actDecide{ID: id, Action: vd.Action, Reason: reason, Hints: vd.Hints, Invalid: vd.Invalid}
	switch vd.Action {
	case Retry:
		if attemptsLeft(t, v.maxRetries, false) <= 0 {
			d.Action, d.Reason = Continue, "retries exhausted (--max-retries); "+reason
			return []action{d}
		}
		return []action{d, actRetry{ID: id, Hints: vd.Hints}}
	case Replan:
		tasks, err := replanTasks(v.g, vd.Replan)
		if err == nil {
			err = v.g.Clone().Replace(tasks)
		}
		if err != nil {
			d.Action, d.Reason = Continue, fmt.Sprintf("replan rejected (%v); continuing without %s", err, id)
			return []action{d}
		}
		return []action{d, actReplan{Tasks: tasks}}
	case Abort:
		return []action{d, actAbort{}}
	default:
		d.Action = Continue
		return []action{d}
	}
}
