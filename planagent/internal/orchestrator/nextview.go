package orchestrator

import (
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// What next reads, made from the run: its view of the graph and of what is
// under way, and the events as it knows them.

// event is what the loop hands next: a next.Event, or one of the two below
// that carry what the executor needs besides (a report's tokens and files,
// a replan's tasks).
type event any

// reported: the report of the attempt in flight arrived.
type reported struct {
	ID, Key string // Key: the flight it answers (run.key)
	Report  *protocol.Report
}

// decided: the decider answered about a failed task. tasks are its
// replan's, validated (set by nextEvent).
type decided struct {
	ID      string
	Verdict Verdict
	tasks   []taskgraph.Task
}

// nextEvent is ev as next reads it, and ev with what the executor needs of
// it. A replan is validated like a plan against the graph here, on a clone:
// plan validation lives with the plans, and next is told whether it holds.
func nextEvent(g *taskgraph.Graph, ev event) (event, next.Event) {
	switch e := ev.(type) {
	case reported:
		key := e.Key
		if key == e.ID {
			key = ""
		}
		return e, next.EvReport{ID: e.ID, Key: key, Report: next.Report{RunID: e.Report.RunID, Attempt: e.Report.Attempt,
			Status: next.ReportStatus(e.Report.Status), Reason: e.Report.Reason, Summary: e.Report.Summary, Error: e.Report.Error,
			Env: envfault.InText(e.Report.Error)}}
	case decided:
		vd := e.Verdict
		v := next.Verdict{Action: vd.Action, Reason: vd.Reason, Invalid: vd.Invalid, Hints: vd.Hints}
		if vd.Action == Replan {
			e.tasks, v.ReplanErr = validReplan(g, vd)
		}
		return e, next.EvDecided{ID: e.ID, Verdict: v}
	case next.Event:
		return e, e
	}
	panic("orchestrator: an event next does not know") // only the observer makes events
}

// validReplan is a replan's tasks, validated like a plan and tried on a
// clone of the graph.
func validReplan(g *taskgraph.Graph, vd Verdict) ([]taskgraph.Task, error) {
	tasks, err := replanTasks(g, vd.Replan)
	if err == nil {
		err = g.Clone().Replace(tasks)
	}
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// graphView is the task graph as next reads it; attempts is the run's
// default of a task's attempts (Options.Attempts).
type graphView struct {
	g        *taskgraph.Graph
	attempts int
	r        *run // the series of the tasks of several attempts
}

func (v graphView) Task(id string) next.Task {
	t, _ := v.g.Get(id)
	nt := next.Task{Failed: t.Status == taskgraph.Failed, Attempts: t.Attempts, Granted: t.Granted, HasAcceptance: len(t.Acceptance) > 0,
		BestOf: bestOf(t, v.attempts)}
	if v.r != nil && v.r.several(id) {
		nt.Several = true
		v.r.series.View(id, v.r.st.Info[id], t.Status == taskgraph.InProgress, &nt)
	}
	return nt
}

// bestOf is task t's attempts: the plan's, else the run's default.
func bestOf(t taskgraph.Task, def int) int {
	if t.BestOf > 0 {
		return t.BestOf
	}
	return def
}

func (v graphView) Ready(n int) []string { return v.g.ReadyN(n) }
func (v graphView) Finished() bool       { return v.g.Done() }
func (v graphView) Summary() string      { return v.g.Summary() }

func (v graphView) Completed() bool {
	return v.g.Counts()[taskgraph.Completed] == v.g.Len()
}

// view is the snapshot next decides on. Reading it changes nothing.
func (r *run) view() next.View {
	// A configuration error stops the run like a reached budget: nothing
	// new starts, and the run pauses once nothing is under way.
	stop, announce := "configuration error: "+r.st.ConfigError, false
	if r.st.ConfigError == "" {
		stop = r.budgetHit().text
		announce = stop != "" && !r.spent.noted
	}
	var inSeries []string
	for _, id := range r.series.Tasks() {
		if t, _ := r.g.Get(id); t.Status == taskgraph.InProgress {
			inSeries = append(inSeries, id)
		}
	}
	v := next.View{Graph: graphView{r.g, r.o.opts.Attempts, r}, Policy: r.o.opts.Policy, FirstPassWins: r.o.opts.FirstPassWins, Series: inSeries,
		Parallel: r.o.opts.Parallel, MaxRetries: r.o.opts.MaxRetries, Decider: r.o.opts.Decider != nil,
		Isolated: r.isolated(), Budget: stop, BudgetNew: announce,
		RunID: r.st.RunID, HeartbeatTimeout: r.o.opts.HeartbeatTimeout}
	r.underway.fill(&v)
	if r.st.Checkpoints != nil {
		v.Head = r.st.Checkpoints.Head
	}
	return v
}
