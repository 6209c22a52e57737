// Package next decides what a run does next: Decide(view, event) returns
// the actions that follow an event. It is the one place that decides:
// the retry budget, acceptance, decisions, timeouts, a silent watcher,
// stale reports, the merge queue's order and when the run ends. It does no
// I/O: the clock, the heartbeat, the reports and the merge queue come in as
// the view and the event, and depguard's next-is-pure rule (.golangci.yml)
// keeps the package free of imports that could read or write anything. The orchestrator observes (files,
// ticks, the runtime) and carries the actions out.
package next

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Event is something that happened to the run.
type Event interface{ isEvent() }

// EvSettle follows every other Event: start what can start, or end the run.
type EvSettle struct{}

// EvReport: the report of the attempt in flight arrived. Key is the
// flight it answers (View.Flights; "" is ID: a task of one attempt).
type EvReport struct {
	ID, Key string
	Report  Report
}

// EvBadReport: the report of the attempt in flight cannot be read.
type EvBadReport struct {
	ID, Key string
	Err     error
}

// EvAccepted: the acceptance commands finished; Failure is "" when all
// passed. Summary is the agent's, from its report.
type EvAccepted struct {
	ID, Failure, Summary string
	Output               string // what the acceptance commands printed
	// Env: the commands could not run for a fault of the machine (a full
	// disk, the engine gone), not of the task; Failure says it too.
	Env error
}

// EvDecided: the decider answered about a failed task.
type EvDecided struct {
	ID      string
	Verdict Verdict
}

// Choice is what is done about a failed task.
type Choice string

// The choices of the decision step.
const (
	Retry    Choice = "retry"    // run the task again, with hints
	Replan   Choice = "replan"   // replace every unfinished task
	Continue Choice = "continue" // go on without it (its dependants are skipped)
	Abort    Choice = "abort"    // stop the run
)

// Verdict is the decider's answer as Decide reads it. A replan's tasks were
// validated like a plan against the graph by the orchestrator (plan
// validation lives with the plans): ReplanErr says why they cannot be used.
type Verdict struct {
	Action          Choice
	Reason, Invalid string // Invalid: why the model's answer was unusable
	Hints           []string
	ReplanErr       error
}

// EvMerged: the merge queue is done with a completed attempt. Candidate is
// the integration state with the attempt applied (Changed says whether it
// differs); Conflict names the files that clashed with work merged since
// the attempt's copy was made; Failure is a failed commit, merge or
// acceptance command.
type EvMerged struct {
	ID, Candidate, Failure, Summary string
	// Onto is the integration state the attempt was merged onto ("" for
	// a result that could not reach the workspace).
	Onto       string
	Acceptance string // what the acceptance commands printed
	Changed    bool
	Conflict   []string
	Attempt    int // the attempt merged
	// Env: the merge could not be made for a fault of the machine (a full
	// disk, the engine gone), not of the task; Failure says it too.
	Env error
	// Kept is the ref the attempt's squashed result is kept under, as it
	// was not merged (its acceptance failed, it conflicted): recorded on
	// its result by the orchestrator, not read by Decide.
	Kept string
}

// EvTimedOut: a task Decide gave up on (ActAbandon) is abandoned: what
// worked on it is stopped.
type EvTimedOut struct {
	ID, Key string // Key: the flight given up on ("" is ID)
	Attempt int
}

// EvTick: the clock ticked. Now is the clock's time; Heartbeat is when the
// newest watcher heartbeat was written (zero: there is none).
type EvTick struct{ Now, Heartbeat time.Time }

// EvAgentDied: an agent died. TaskID names the task whose attempt it ran
// (Attempt, when not 0, which attempt); "" is the one watcher serving
// every task, which must be restarted. Reported are the tasks in flight
// whose report is there: they finished before it died.
type EvAgentDied struct {
	TaskID   string
	Attempt  int
	Cause    error
	Reported []string
	// Env: Cause is a fault of the machine (a full disk, the engine gone).
	Env bool
}

// EvInterruptedMerge: resume found a merge a crash cut short. The run had
// saved Target as the task's merge while its integration state was
// Checkpoint; the branch is at Head. Summary and Acceptance are the
// task's, as its merge recorded them.
type EvInterruptedMerge struct {
	ID, Head, Target, Checkpoint string
	// Ahead: Head holds Checkpoint and commits of the user's on top (the
	// move goes on top of them).
	Ahead               bool
	Summary, Acceptance string
}

func (EvInterruptedMerge) isEvent() {}

// EvResumedInFlight: resume found task ID in progress, and what of its
// attempt is on disk: its report, a watcher's claim on it, its command.
type EvResumedInFlight struct {
	ID                     string
	Report, Claim, Command bool
}

func (EvResumedInFlight) isEvent() {}
func (EvSettle) isEvent()          {}
func (EvReport) isEvent()          {}
func (EvBadReport) isEvent()       {}
func (EvAccepted) isEvent()        {}
func (EvDecided) isEvent()         {}
func (EvCopied) isEvent()          {}
func (EvTimedOut) isEvent()        {}
func (EvMerged) isEvent()          {}
func (EvAgentDied) isEvent()       {}
func (EvTick) isEvent()            {}
func (EvChecked) isEvent()         {}

// EvCopied: the copies of the attempts dispatched together (IDs, their
// flights' keys) are made, off the loop; Err says one could not be.
type EvCopied struct {
	IDs []string
	Err error
}

// Action is one thing the executor does.
type Action interface{ isAction() }

// ActDispatch starts a pending task's next attempt. With checkpoints its
// copy is made off the loop (→ EvCopied) and ActLaunch sends it; without,
// it is sent at once.
type ActDispatch struct{ ID string }

// ActLaunch sends a dispatched attempt whose copy is made: its context and
// command, then the runtime's launch. Launches in a row start together.
type ActLaunch struct{ ID string }

// ActHalt ends Drive with Err: the run cannot go on (a copy that cannot be
// made, a full disk); it is left interrupted, resumable, with the cause.
type ActHalt struct{ Err error }

// ActPutBack puts a task whose attempt a fault of the machine ended (a
// full disk, the engine gone) back to pending, that attempt not counted
// against its retries: the task did nothing wrong, and the run halts
// (ActHalt) for the operator to fix the machine and resume.
type ActPutBack struct{ ID, Note string }

// ActRecord books the report of the event on the task (its summary,
// files, tokens and time), whose attempt is no longer in flight.
type ActRecord struct{ ID, Key string }

// ActAccept runs the task's acceptance commands (off the loop) → EvAccepted.
type ActAccept struct{ ID string }

// ActMerge queues a completed attempt for the merge.
type ActMerge struct{ ID string }

// ActStartMerge starts the merge of the merge queue's first attempt (off
// the loop) → EvMerged, onto Onto ("": the integration state as it is).
type ActStartMerge struct{ ID, Onto string }

// ActRemerge puts a merged attempt back at the head of the merge queue:
// it was merged onto a state the integration state never reached.
type ActRemerge struct{ ID string }

// ActDropStaleReport ignores a report left by an earlier run or an earlier
// attempt (Attempt) of the task, whose attempt Want is in flight.
type ActDropStaleReport struct {
	ID, RunID     string
	Attempt, Want int
}

// ActStopWaiting stops waiting for the attempt in flight: its report
// cannot be read, or its agent died.
type ActStopWaiting struct{ ID string }

// ActFreeClaim frees the claim of a dead agent's task, so the command of
// its next attempt is taken afresh.
type ActFreeClaim struct{ ID string }

// ActNoteLateDeath notes the death of an earlier attempt's agent (Attempt),
// found once the next attempt was under way: that one lives on.
type ActNoteLateDeath struct {
	ID      string
	Attempt int
	Cause   error
}

// ActAbandon gives up on an attempt in flight past its deadline: what
// still works on it is stopped before its copy is thrown away → EvTimedOut.
type ActAbandon struct {
	ID, Key string // Key: the flight ("" is ID)
	Attempt int
}

// ActStopSilentWatcher stops the watcher whose heartbeat went stale while
// tasks waited on it for longer than the heartbeat timeout (Silent): a
// frozen watcher must not come back and run them a second time. The tasks
// it held come back as EvAgentDied.
type ActStopSilentWatcher struct{ Silent time.Duration }

// ActComplete marks the task completed; with checkpoints, Commit is the
// merged state the integration branch moves to first.
type ActComplete struct{ ID, Summary, Commit, Acceptance string }

// ActResend writes a resumed attempt's command again (and, with
// checkpoints, makes its copy again: a crash before the command may have
// left it half made).
type ActResend struct{ ID string }

// ActRelaunch asks the runtime to carry out a resumed attempt whose
// command is written.
type ActRelaunch struct{ ID string }

// ActFinishMerge moves the integration state to Target again, the branch,
// the index and the files: the crash may have come before they followed.
type ActFinishMerge struct{ ID, Target string }

// ActForgetMerge drops an interrupted merge whose branch someone else
// moved (to Head): the task is merged again from its report.
type ActForgetMerge struct{ ID, Head string }

// ActFail marks the task failed (its dependants are skipped) and notes why.
type ActFail struct{ ID, Reason string }

// ActAsk asks the decider (off the loop) about a failure → EvDecided.
type ActAsk struct {
	ID, Error, PlanSummary string
	AttemptsLeft           int
}

// ActRetry sends a failed task again; Hints reach the next attempt.
type ActRetry struct {
	ID    string
	Hints []string
}

// ActRequeue sends a task again whose attempt ended through no fault of its
// own (the agent was interrupted or died), without asking anyone.
type ActRequeue struct{ ID, Note string }

// ActReplan replaces every unfinished task with the tasks of the decider's
// replan for ID (validated before Decide saw it).
type ActReplan struct{ ID string }

// ActAbort stops dispatching: the run ends once nothing is in flight.
type ActAbort struct{}

// ActStopConfig stops dispatching because of a configuration error the
// agent met (State.ConfigError): the run pauses once nothing is in flight,
// and planagent exits 2 with Reason.
type ActStopConfig struct{ Reason string }

// ActDecide records a decision about a failed task and tells the operator.
type ActDecide struct {
	ID              string
	Action          Choice
	Reason, Invalid string
	Hints           []string
}

// ActRestart starts a fresh shared watcher after the old one died.
type ActRestart struct{ Cause error }

// ActNoteBudget tells the operator, once, that a budget is reached.
type ActNoteBudget struct{ Reason string }

// ActFinish ends the run with Status; Paused says which budget paused it.
type ActFinish struct {
	Status RunStatus
	Paused string
}

func (ActDispatch) isAction()          {}
func (ActLaunch) isAction()            {}
func (ActHalt) isAction()              {}
func (ActRecord) isAction()            {}
func (ActCheck) isAction()             {}
func (ActEndAttempt) isAction()        {}
func (ActChoose) isAction()            {}
func (ActStopAttempts) isAction()      {}
func (ActPutBack) isAction()           {}
func (ActAccept) isAction()            {}
func (ActMerge) isAction()             {}
func (ActStartMerge) isAction()        {}
func (ActRemerge) isAction()           {}
func (ActDropStaleReport) isAction()   {}
func (ActFreeClaim) isAction()         {}
func (ActNoteLateDeath) isAction()     {}
func (ActStopWaiting) isAction()       {}
func (ActAbandon) isAction()           {}
func (ActStopSilentWatcher) isAction() {}
func (ActComplete) isAction()          {}
func (ActFinishMerge) isAction()       {}
func (ActResend) isAction()            {}
func (ActRelaunch) isAction()          {}
func (ActForgetMerge) isAction()       {}
func (ActFail) isAction()              {}
func (ActAsk) isAction()               {}
func (ActRetry) isAction()             {}
func (ActRequeue) isAction()           {}
func (ActReplan) isAction()            {}
func (ActAbort) isAction()             {}
func (ActStopConfig) isAction()        {}
func (ActDecide) isAction()            {}
func (ActRestart) isAction()           {}
func (ActNoteBudget) isAction()        {}
func (ActFinish) isAction()            {}

// RunStatus is how a run ended (runrecord.RunStatus's values).
type RunStatus string

// The statuses a run finishes with.
const (
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunAborted   RunStatus = "aborted"
	RunPaused    RunStatus = "paused"
)

// Graph is what Decide reads of the task graph.
type Graph interface {
	// Task is the task id; the zero Task for an unknown id.
	Task(id string) Task
	// Ready is up to n tasks ready to start, in topological order.
	Ready(n int) []string
	// Finished says no task is pending or in progress.
	Finished() bool
	// Completed says every task completed.
	Completed() bool
	// Summary is the plan's state in a few lines, for the decider.
	Summary() string
}

// Task is what Decide reads of a task.
type Task struct {
	Failed        bool
	Attempts      int // attempts started
	Granted       int // attempts granted beyond --max-retries
	HasAcceptance bool
	// BestOf is the task's attempts (the plan's, else the run's; 0 or 1:
	// one). A task that fails gets at least that many for failures of its
	// own, however low --max-retries is.
	BestOf int
	// Several: the task's attempts run side by side in copies of their
	// own, each checked on its own result, the best passing one merged
	// (a run with checkpoints and BestOf > 1). The fields below are its
	// current series of attempts.
	Several bool
	Series  int // attempts the series may have (BestOf, then 1 after a retry)
	Started int // attempts of the series started
	Live    int // started and not ended: being copied, running, being checked
	Held    int // passed their check, not yet tried for the merge
	// FirstFailed: the series' first attempt failed (escalate starts the rest).
	FirstFailed bool
	// Chosen: a candidate is queued or being merged.
	Chosen    bool
	LastError string // why the series' last attempt failed
}

// View is what Decide reads: the graph and what is under way. Decide never
// changes it.
type View struct {
	Graph      Graph
	Running    int  // attempts waiting for their report
	Copying    int  // attempts dispatched whose copies are being made (→ EvCopied)
	Accepting  int  // tasks finished but waiting for their acceptance or merge (queued or under way)
	Deciding   int  // decider calls under way
	Isolated   bool // attempts work in copies and are merged (a run with checkpoints)
	Aborted    bool
	Parallel   int
	MaxRetries int
	Decider    bool // a decider is configured; without one the rules below decide
	// Budget names the run budget that is reached ("" while none is): no
	// new task starts, and once nothing is under way the run pauses.
	Budget string
	// BudgetNew: the budget was found reached and not yet announced.
	BudgetNew bool
	RunID     string
	// Flights are the attempts waiting for their report, by key: the
	// task's id for a task of one attempt, the attempt's file stem
	// (protocol.Stem) for one of several.
	Flights map[string]Flight
	// Policy is how a task's several attempts start (PolicyEscalate,
	// PolicyParallel); FirstPassWins: the first passing one wins at once.
	Policy        string
	FirstPassWins bool
	// Series are the tasks with several attempts in progress, sorted.
	Series []string
	// HeartbeatTimeout: with a task waiting this long and no watcher
	// heartbeat this fresh, the watcher is taken for dead.
	HeartbeatTimeout time.Duration
	// MergeNext is the first attempt in the merge queue ("" when it is
	// empty); Merging says a merge is under way.
	MergeNext string
	Merging   bool
	// Head is the integration state (with checkpoints).
	Head string
}

// Flight is what Decide knows of an attempt in flight.
type Flight struct {
	ID       string // its task ("": its key in View.Flights)
	Attempt  int
	Launched time.Time // when its command went out: the heartbeat check waits from here
	Deadline time.Time // no report by then: it is abandoned
}

// SpareAttempts is how many attempts beyond --max-retries a task gets for
// interruptions and agent deaths, which are not its fault; a task that kills
// every agent it runs on still ends.
const SpareAttempts = 2

// AttemptsLeft is the one retry budget: how many more attempts a task may
// have after its last one ended, for a failure of its own (spare false) or
// through no fault of its own (spare true).
func AttemptsLeft(t Task, maxRetries int, spare bool) int {
	limit := max(maxRetries+1, t.BestOf) + t.Granted
	if spare {
		limit += SpareAttempts
	}
	return limit - t.Attempts
}

// Decide decides what to do about ev.
func Decide(v View, ev Event) []Action {
	switch ev := ev.(type) {
	case EvSettle:
		return settle(v)
	case EvReport:
		return onReport(v, ev)
	case EvBadReport:
		stop := ActStopWaiting{ID: keyOr(ev.Key, ev.ID)}
		if t := v.Graph.Task(ev.ID); t.Several {
			return []Action{stop, ActEndAttempt{ID: ev.ID, Attempt: v.Flights[stop.ID].Attempt, Reason: "unreadable report: " + errText(ev.Err)}}
		}
		return append([]Action{stop}, failure(v, ev.ID, "unreadable report: "+errText(ev.Err))...)
	case EvChecked:
		return onChecked(v, ev)
	case EvAccepted:
		if ev.Env != nil {
			return envStop(ev.ID, ev.Env)
		}
		if ev.Failure != "" {
			return failure(v, ev.ID, ev.Failure)
		}
		return []Action{ActComplete{ID: ev.ID, Summary: ev.Summary, Acceptance: ev.Output}}
	case EvMerged:
		return onMerged(v, ev)
	case EvCopied:
		return onCopied(v, ev)
	case EvResumedInFlight:
		switch {
		case ev.Report || ev.Claim:
			return nil // its report is waiting, or a watcher has it
		case !ev.Command:
			// Crashed between saving the state and writing the command.
			return []Action{ActResend{ID: ev.ID}, ActRelaunch{ID: ev.ID}}
		}
		return []Action{ActRelaunch{ID: ev.ID}}
	case EvInterruptedMerge:
		// At the target or still at the old state, moving again finishes
		// the move either way; with the user's commits on top of the old
		// state, the move goes on top of them; anything else (a branch
		// reset or rewritten) is merged again.
		if ev.Head == ev.Target || ev.Head == ev.Checkpoint || ev.Ahead {
			return []Action{ActFinishMerge{ID: ev.ID, Target: ev.Target}, ActComplete{ID: ev.ID, Summary: ev.Summary, Acceptance: ev.Acceptance}}
		}
		return []Action{ActForgetMerge{ID: ev.ID, Head: ev.Head}}
	case EvTimedOut:
		if v.Graph.Task(ev.ID).Several {
			return []Action{ActEndAttempt{ID: ev.ID, Attempt: ev.Attempt, Reason: "no report within the task timeout"}}
		}
		return failure(v, ev.ID, "no report within the task timeout")
	case EvAgentDied:
		return onDeath(v, ev)
	case EvDecided:
		return onVerdict(v, ev.ID, ev.Verdict)
	case EvTick:
		return onTick(v, ev)
	}
	panic("next: an event Decide does not know") // Event is sealed: a case is missing above
}

// settle dispatches ready tasks up to the parallel limit; with nothing left
// to wait for, it ends the run. Nothing starts while the decider is asked:
// its answer may replace the unfinished tasks or stop the run.
//
// The limit counts every task in flight: its copy being made, running,
// and finished but waiting for its acceptance or its merge. Such a task still holds its attempt copy
// (and, with acceptance, a container): counting only the running ones let
// a 100-task fan-out at --parallel 4 pile up 91 unmerged tasks and 50 copies.
func settle(v View) []Action {
	var out []Action
	if v.BudgetNew {
		out = append(out, ActNoteBudget{Reason: v.Budget})
	}
	// The merge queue: one merge at a time, in completion order, each onto
	// the state the previous one left. Started before the dispatches: the
	// merge runs off the loop, while the loop makes the new attempts'
	// copies, and the queue's one line is what bounds a fan-out.
	if v.MergeNext != "" && !v.Merging {
		out = append(out, ActStartMerge{ID: v.MergeNext})
	}
	// A task of several attempts whose series has ended chooses its
	// winner, or fails; the loop settles again once that is carried out.
	if acts := settleSeries(v); len(acts) > 0 {
		return append(out, acts...)
	}
	started := false
	if !v.Aborted && v.Deciding == 0 && v.Budget == "" {
		// Each attempt counts against --parallel: the series under way
		// first (escalate's K−1), then new tasks.
		room := v.Parallel - v.Copying - v.Running - v.Accepting
		for _, id := range v.Series {
			t := v.Graph.Task(id)
			for range min(AttemptsToStart(v.Policy, t.Series, t.Started, t.FirstFailed), max(room, 0)) {
				out, started, room = append(out, ActDispatch{ID: id}), true, room-1
			}
		}
		for _, id := range v.Graph.Ready(room) {
			if room <= 0 {
				break
			}
			n := 1
			if t := v.Graph.Task(id); t.Several {
				n = max(1, min(AttemptsToStart(v.Policy, t.Series, 0, false), room))
			}
			for range n {
				out = append(out, ActDispatch{ID: id})
			}
			started, room = true, room-n
		}
	}
	if started || v.Copying > 0 || v.Running > 0 || v.Accepting > 0 || v.Deciding > 0 {
		return out
	}
	status := RunFailed
	switch {
	case v.Aborted:
		status = RunAborted
	case v.Budget != "" && !v.Graph.Finished():
		return append(out, ActFinish{Status: RunPaused, Paused: v.Budget})
	case v.Graph.Completed():
		status = RunCompleted
	}
	return append(out, ActFinish{Status: status})
}

// onTick abandons the attempts past their deadline, then takes the watcher
// for dead when its heartbeat went stale while tasks waited on it. Exited
// does not cover that: a compose watcher planagent did not start, or a
// frozen process, never reports there. Only a task launched at least the
// heartbeat timeout ago counts: the container of one just launched (or a
// watcher just started) may not have beaten yet, and the previous
// attempt's container took its heartbeat away when it exited.
func onTick(v View, ev EvTick) []Action {
	var out []Action
	since := ev.Now.Add(-v.HeartbeatTimeout)
	waited := false
	for _, key := range slices.Sorted(maps.Keys(v.Flights)) {
		f := v.Flights[key]
		if ev.Now.After(f.Deadline) {
			a := ActAbandon{ID: key}
			if f.ID != "" && f.ID != key {
				a = ActAbandon{ID: f.ID, Key: key, Attempt: f.Attempt}
			}
			out = append(out, a)
			continue
		}
		if !f.Launched.After(since) {
			waited = true
		}
	}
	if waited && ev.Heartbeat.Before(since) {
		out = append(out, ActStopSilentWatcher{Silent: v.HeartbeatTimeout})
	}
	return out
}

func onReport(v View, ev EvReport) []Action {
	// A watcher that retakes the command of a dead one bumps the attempt,
	// so a later attempt of this run is the answer; an earlier one is stale.
	key := keyOr(ev.Key, ev.ID)
	if want := v.Flights[key].Attempt; ev.Report.RunID != v.RunID || ev.Report.Attempt < want {
		return []Action{ActDropStaleReport{ID: key, RunID: ev.Report.RunID, Attempt: ev.Report.Attempt, Want: want}}
	}
	rec := ActRecord{ID: ev.ID}
	t := v.Graph.Task(ev.ID)
	if t.Several {
		return onAttemptReport(v, ev, key)
	}
	if ev.Report.Env && ev.Report.Status != ReportCompleted && ev.Report.Status != ReportInterrupted {
		return append([]Action{rec}, envStop(ev.ID, envError(ev.Report.Error))...)
	}
	switch ev.Report.Status {
	case ReportCompleted:
		if v.Isolated {
			return []Action{rec, ActMerge{ID: ev.ID}}
		}
		if t.HasAcceptance {
			return []Action{rec, ActAccept{ID: ev.ID}}
		}
		return []Action{rec, ActComplete{ID: ev.ID, Summary: ev.Report.Summary}}
	case ReportInterrupted:
		// The watcher was stopped mid-task: nothing is wrong with the task.
		if AttemptsLeft(t, v.MaxRetries, true) > 0 {
			return []Action{rec, ActRequeue{ID: ev.ID, Note: "interrupted"}}
		}
		return append([]Action{rec}, failure(v, ev.ID, "interrupted too many times")...)
	default:
		msg := ev.Report.Error
		if msg == "" {
			msg = ev.Report.Summary
		}
		if ev.Report.Reason == ReasonConfig {
			// The model server cannot serve the agent as configured: every
			// task would fail the same way, so no task starts and the run
			// pauses (exit 2). The task waits, pending, for a resume once
			// the server is fixed: nothing was wrong with it.
			return []Action{rec, ActRequeue{ID: ev.ID, Note: "stopped by a configuration error: " + msg}, ActStopConfig{Reason: msg}}
		}
		if ev.Report.Reason == ReasonBudget {
			// The decider hears it was the budget, not the work, that ended it.
			return append([]Action{rec}, failure(v, ev.ID, "budget: the agent passed the task's token budget: "+msg)...)
		}
		return append([]Action{rec}, failure(v, ev.ID, "the agent reported failure: "+msg)...)
	}
}

// onCopied launches the attempts whose copies are made. A copy that could
// not be made stops the run: the next would fail alike (a full disk, the
// repository gone). An attempt the run was aborted under goes back to
// pending instead of starting after the abort.
func onCopied(v View, ev EvCopied) []Action {
	if ev.Err != nil {
		return []Action{ActHalt{Err: ev.Err}}
	}
	out := make([]Action, 0, len(ev.IDs))
	for _, id := range ev.IDs {
		if v.Aborted {
			out = append(out, ActRequeue{ID: id, Note: "not started: the run was aborted"})
			continue
		}
		out = append(out, ActLaunch{ID: id})
	}
	return out
}

// onMerged completes a merged attempt; a conflict sends the task again on
// the new base (an attempt of its budget), naming the files.
//
// The queue's next merge starts onto this one's result at once, while the
// loop moves the workspace there: the merges do not wait for the moves.
// Should the move fail, that merge went onto a state the integration
// state never reached, and is made again.
func onMerged(v View, ev EvMerged) []Action {
	if ev.Onto != "" && ev.Onto != v.Head {
		return []Action{ActRemerge{ID: ev.ID}}
	}
	if ev.Env != nil {
		if v.Graph.Task(ev.ID).Several {
			// The candidate stays held: resume tries its merge again.
			return []Action{ActHalt{Err: ev.Env}}
		}
		return envStop(ev.ID, ev.Env)
	}
	if t := v.Graph.Task(ev.ID); t.Several && (len(ev.Conflict) > 0 || ev.Failure != "") {
		return onCandidateRejected(v, t, ev)
	}
	switch {
	case len(ev.Conflict) > 0:
		t := v.Graph.Task(ev.ID)
		files := strings.Join(ev.Conflict, ", ")
		reason := "merge conflict in " + files + " with work merged since the attempt started"
		if AttemptsLeft(t, v.MaxRetries, false) <= 0 {
			return failure(v, ev.ID, reason)
		}
		hint := "Your previous attempt conflicted with changes merged meanwhile in " + files +
			": this attempt starts from the current state; read those files again and make your change on top of them."
		return []Action{ActFail{ID: ev.ID, Reason: reason},
			ActDecide{ID: ev.ID, Action: Retry, Reason: reason + "; redone on the new base", Hints: []string{hint}},
			ActRetry{ID: ev.ID, Hints: []string{hint}}}
	case ev.Failure != "":
		return failure(v, ev.ID, ev.Failure)
	}
	a := ActComplete{ID: ev.ID, Summary: ev.Summary, Acceptance: ev.Acceptance}
	onto := v.Head
	if ev.Changed {
		a.Commit, onto = ev.Candidate, ev.Candidate
	}
	if v.MergeNext != "" && !v.Merging {
		return []Action{ActStartMerge{ID: v.MergeNext, Onto: onto}, a}
	}
	return []Action{a}
}

// onDeath stops waiting for the tasks in flight whose agent died: the one
// attempt named, or every task of the shared watcher. Those that reported
// before dying are collected as usual; the others go again, or fail once
// their agents died too often.
func onDeath(v View, ev EvAgentDied) []Action {
	var out []Action
	for _, key := range slices.Sorted(maps.Keys(v.Flights)) {
		f := v.Flights[key]
		id := keyOr(f.ID, key)
		if ev.TaskID != "" && id != ev.TaskID {
			continue
		}
		if t := v.Graph.Task(id); t.Several {
			// Another attempt of the task lives on: only the one named died.
			if ev.Attempt != 0 && f.Attempt != ev.Attempt {
				continue
			}
			out = append(out, ActFreeClaim{ID: key})
			if !slices.Contains(ev.Reported, key) {
				out = append(out, ActStopWaiting{ID: key},
					ActEndAttempt{ID: id, Attempt: f.Attempt, Reason: "the coding agent died (" + errText(ev.Cause) + ")"})
			}
			continue
		}
		if ev.Attempt != 0 && f.Attempt != ev.Attempt {
			out = append(out, ActNoteLateDeath{ID: id, Attempt: ev.Attempt, Cause: ev.Cause})
			continue
		}
		out = append(out, ActFreeClaim{ID: id})
		if slices.Contains(ev.Reported, id) {
			continue
		}
		out = append(out, ActStopWaiting{ID: id})
		if ev.Env && ev.TaskID != "" {
			return append(out, envStop(id, ev.Cause)...)
		}
		t := v.Graph.Task(id)
		if AttemptsLeft(t, v.MaxRetries, true) > 0 {
			out = append(out, ActRequeue{ID: id, Note: "the coding agent died (" + errText(ev.Cause) + ")"})
			continue
		}
		out = append(out, failure(v, id, "the coding agent died "+strconv.Itoa(t.Attempts)+" times while running it; last: "+errText(ev.Cause))...)
	}
	if ev.TaskID == "" {
		out = append(out, ActRestart{Cause: ev.Cause})
	}
	return out
}

// envStop puts task id back, its attempt not counted, and halts the run:
// err is the machine's fault, and every next attempt would meet it too.
// A plain resume, once the machine is fixed, redoes the task.
func envStop(id string, err error) []Action {
	return []Action{ActPutBack{ID: id, Note: "stopped by a fault of the machine: " + errText(err)}, ActHalt{Err: err}}
}

// envError is the error of an agent's report that named a fault of the
// machine.
type envError string

func (e envError) Error() string { return string(e) }

// failure fails the task, then asks the decider, or without one retries
// while attempts are left.
func failure(v View, id, reason string) []Action {
	t := v.Graph.Task(id)
	left := AttemptsLeft(t, v.MaxRetries, false)
	out := []Action{ActFail{ID: id, Reason: reason}}
	// A task of several attempts has them whatever the decider would say:
	// the plan asked for them (escalate: the next ones start once the
	// first failed).
	if t.BestOf > 1 && t.Attempts < t.BestOf+t.Granted {
		return append(out, ActDecide{ID: id, Action: Retry, Reason: "attempt " + strconv.Itoa(t.Attempts+1) + " of " + strconv.Itoa(t.BestOf) + " (attempts)"},
			ActRetry{ID: id})
	}
	if v.Decider {
		return append(out, ActAsk{ID: id, Error: reason, PlanSummary: v.Graph.Summary(), AttemptsLeft: left})
	}
	if left > 0 {
		return append(out, ActDecide{ID: id, Action: Retry, Reason: "attempts left"}, ActRetry{ID: id})
	}
	return append(out, ActDecide{ID: id, Action: Continue, Reason: "retries exhausted (--max-retries)"})
}

// onVerdict turns the decider's answer into actions, holding it to the
// rules: no retry past the budget, a replan that validates like a plan.
func onVerdict(v View, id string, vd Verdict) []Action {
	t := v.Graph.Task(id)
	if !t.Failed {
		return nil // a replan or abort already dealt with it
	}
	reason := vd.Reason
	if reason == "" && vd.Invalid != "" {
		reason = "the decision was unusable: " + vd.Invalid
	}
	d := ActDecide{ID: id, Action: vd.Action, Reason: reason, Hints: vd.Hints, Invalid: vd.Invalid}
	switch vd.Action {
	case Retry:
		if AttemptsLeft(t, v.MaxRetries, false) <= 0 {
			d.Action, d.Reason = Continue, "retries exhausted (--max-retries); "+reason
			return []Action{d}
		}
		return []Action{d, ActRetry{ID: id, Hints: vd.Hints}}
	case Replan:
		if vd.ReplanErr != nil {
			d.Action, d.Reason = Continue, "replan rejected ("+errText(vd.ReplanErr)+"); continuing without "+id
			return []Action{d}
		}
		return []Action{d, ActReplan{ID: id}}
	case Abort:
		return []Action{d, ActAbort{}}
	default:
		d.Action = Continue
		return []Action{d}
	}
}

// errText is err as %v prints it; fmt is not imported here (it reaches os).
func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
