package next

import (
	"strconv"
	"strings"
)

// A task of several attempts side by side (Task.Several): its attempts'
// events and actions, and how its series ends. docs/attempts.md.

// EvChecked: attempt Attempt of a task with several attempts (Task.Several)
// was checked on its own result: its acceptance commands (and the judge)
// ran on its squashed commit. Failure is "" when all passed: it is held as
// a candidate until the task's attempts have ended.
type EvChecked struct {
	ID      string
	Attempt int
	Failure string
	Env     error // a fault of the machine, not of the attempt
}

// Report is what Decide reads of an attempt's report.
type Report struct {
	RunID   string
	Attempt int
	Status  ReportStatus
	Reason  string // ReasonConfig, ReasonBudget, or another the agent gave
	Summary string
	Error   string
	// Env: the agent failed on a fault of the machine (its Error names a
	// full disk or quota), not of the task.
	Env bool
}

// ReportStatus is how an attempt ended (protocol.Status's values).
type ReportStatus string

// The statuses and reasons of a report Decide tells apart; any other
// status is a failure.
const (
	ReportCompleted   ReportStatus = "completed"
	ReportInterrupted ReportStatus = "interrupted"
	// ReasonConfig: the model server cannot serve the agent as configured.
	ReasonConfig = "config"
	// ReasonBudget: the task's token budget stopped the agent.
	ReasonBudget = "budget"
)

// ActCheck runs the acceptance commands (and the judge) of attempt
// Attempt of a task with several attempts on its own squashed result (off
// the loop) → EvChecked.
type ActCheck struct {
	ID      string
	Attempt int
}

// ActEndAttempt ends attempt Attempt of a task with several attempts that
// did not pass (Reason): its copy is thrown away, its commit (if any) kept
// under its ref; the task goes on with its other attempts.
type ActEndAttempt struct {
	ID      string
	Attempt int
	Reason  string
}

// ActChoose ranks the task's held candidates (next.Rank) and queues the
// best one not yet tried for the merge (→ EvMerged).
type ActChoose struct{ ID string }

// ActStopAttempts stops the task's attempts still under way (a passing
// one won: first_pass_wins), saying Reason.
type ActStopAttempts struct{ ID, Reason string }

// settleSeries ends the series of the tasks with several attempts that
// have nothing under way and nothing left to start: the held candidates
// are ranked and the best merged (ActChoose), or, none having passed, the
// task fails as a task of one attempt does. A reached budget stops a
// task's running attempts together, and a task it stopped before any
// passed goes back to pending: resume starts its series afresh.
func settleSeries(v View) []Action {
	var out []Action
	for _, id := range v.Series {
		t := v.Graph.Task(id)
		if v.Budget != "" && !t.Chosen && running(v, id) > 0 {
			out = append(out, ActStopAttempts{ID: id, Reason: "stopped together: " + v.Budget})
			continue
		}
		if t.Chosen || t.Live > 0 {
			continue
		}
		more := AttemptsToStart(v.Policy, t.Series, t.Started, t.FirstFailed) > 0
		if !v.Aborted && v.Budget == "" && more {
			continue // settle starts them
		}
		if t.Held > 0 {
			out = append(out, ActChoose{ID: id})
			continue
		}
		if v.Budget != "" {
			out = append(out, ActRequeue{ID: id, Note: "stopped by the budget (" + v.Budget + ") before an attempt passed: its attempts start afresh on resume"})
			continue
		}
		reason := t.LastError
		if reason == "" {
			reason = "no attempt passed"
		}
		out = append(out, failure(v, id, reason)...)
	}
	return out
}

// running is how many of task id's attempts wait for their report.
func running(v View, id string) int {
	n := 0
	for key, f := range v.Flights {
		if keyOr(f.ID, key) == id {
			n++
		}
	}
	return n
}

// SettlesAgain says the actions of a settle changed what the next settle
// sees without an event to follow (a series ended, chose, was stopped or
// put back): the loop settles once more.
func SettlesAgain(acts []Action) bool {
	for _, a := range acts {
		switch a.(type) {
		case ActChoose, ActStopAttempts, ActFail, ActRequeue:
			return true
		}
	}
	return false
}

// onChecked: a failed check ends the attempt; a passing one is held
// (recorded by the orchestrator) and, with first_pass_wins, wins at once.
func onChecked(v View, ev EvChecked) []Action {
	t := v.Graph.Task(ev.ID)
	switch {
	case ev.Env != nil:
		// Not the attempt's fault: it stays to be checked again on resume.
		return []Action{ActHalt{Err: ev.Env}}
	case ev.Failure != "":
		return []Action{ActEndAttempt{ID: ev.ID, Attempt: ev.Attempt, Reason: ev.Failure}}
	case v.FirstPassWins && !t.Chosen:
		return []Action{ActStopAttempts{ID: ev.ID, Reason: "attempt " + strconv.Itoa(ev.Attempt) + " passed first (first_pass_wins)"}, ActChoose{ID: ev.ID}}
	}
	return nil
}

// keyOr is a flight's key, "" meaning the task's id.
func keyOr(key, id string) string {
	if key != "" {
		return key
	}
	return id
}

// onAttemptReport: the report of one attempt of a task with several. A
// completed one is checked on its own result; any other ends the attempt,
// not the task: its other attempts go on.
func onAttemptReport(v View, ev EvReport, key string) []Action {
	rec := ActRecord{ID: ev.ID, Key: key}
	n := v.Flights[key].Attempt
	msg := ev.Report.Error
	if msg == "" {
		msg = ev.Report.Summary
	}
	switch {
	case ev.Report.Status == ReportCompleted:
		return []Action{rec, ActCheck{ID: ev.ID, Attempt: n}}
	case ev.Report.Status == ReportInterrupted:
		return []Action{rec, ActEndAttempt{ID: ev.ID, Attempt: n, Reason: "interrupted"}}
	case ev.Report.Env:
		return []Action{rec, ActEndAttempt{ID: ev.ID, Attempt: n, Reason: "stopped by a fault of the machine: " + msg}, ActHalt{Err: envError(msg)}}
	case ev.Report.Reason == ReasonConfig:
		return []Action{rec, ActEndAttempt{ID: ev.ID, Attempt: n, Reason: "stopped by a configuration error: " + msg}, ActStopConfig{Reason: msg}}
	case ev.Report.Reason == ReasonBudget:
		return []Action{rec, ActEndAttempt{ID: ev.ID, Attempt: n, Reason: "budget: the agent passed the task's token budget: " + msg}}
	}
	return []Action{rec, ActEndAttempt{ID: ev.ID, Attempt: n, Reason: "the agent reported failure: " + msg}}
}

// onCandidateRejected: the gate rejected the best candidate (its
// acceptance failed on the merged tree, or it conflicted): the
// next-ranked is tried, or, none left, the task fails.
func onCandidateRejected(v View, t Task, ev EvMerged) []Action {
	reason := ev.Failure
	if len(ev.Conflict) > 0 {
		reason = "merge conflict in " + strings.Join(ev.Conflict, ", ") + " with work merged since the attempt started"
	}
	out := []Action{ActEndAttempt{ID: ev.ID, Attempt: ev.Attempt, Reason: reason}}
	switch {
	case t.Held > 0:
		return append(out, ActChoose{ID: ev.ID})
	case AttemptsToStart(v.Policy, t.Series, t.Started, t.FirstFailed || t.Started == 1) > 0:
		return out // escalate's first was rejected: settle starts the rest
	}
	return append(out, failure(v, ev.ID, reason)...)
}
