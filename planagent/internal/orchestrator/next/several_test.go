package next

import (
	"reflect"
	"testing"
	"time"
)

// seriesGraph is a graph of tasks of several attempts as Decide reads it.
type seriesGraph struct {
	tasks map[string]Task
	ready []string
}

func (g seriesGraph) Task(id string) Task { return g.tasks[id] }
func (g seriesGraph) Ready(n int) []string {
	if n <= 0 {
		return nil
	}
	return g.ready[:min(n, len(g.ready))]
}
func (g seriesGraph) Finished() bool  { return false }
func (g seriesGraph) Completed() bool { return false }
func (g seriesGraph) Summary() string { return "" }

func several(t Task) Task {
	t.Several, t.BestOf = true, 3
	if t.Series == 0 {
		t.Series = 3
	}
	return t
}

// dispatches is n attempts of task a started.
func dispatches(n int) []Action {
	var out []Action
	for range n {
		out = append(out, ActDispatch{ID: "a"})
	}
	return out
}

func TestSettleStartsAttemptsSideBySide(t *testing.T) {
	tests := []struct {
		name string
		v    View
		want []Action
	}{
		{
			name: "parallel: all three attempts of a ready task at once",
			v:    View{Parallel: 4, Policy: PolicyParallel, Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{})}, ready: []string{"a"}}},
			want: dispatches(3),
		},
		{
			name: "parallel: --parallel 2 starts two, each attempt counted",
			v:    View{Parallel: 2, Policy: PolicyParallel, Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{}), "b": {}}, ready: []string{"a", "b"}}},
			want: dispatches(2),
		},
		{
			name: "parallel: the third starts when a slot frees, before a new task",
			v: View{Parallel: 3, Running: 2, Policy: PolicyParallel, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 2, Live: 2}), "b": {}}, ready: []string{"b"}}},
			want: dispatches(1),
		},
		{
			name: "escalate: one attempt first",
			v:    View{Parallel: 4, Policy: PolicyEscalate, Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{})}, ready: []string{"a"}}},
			want: dispatches(1),
		},
		{
			name: "escalate: the first failed, the other two together",
			v: View{Parallel: 4, Policy: PolicyEscalate, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 1, FirstFailed: true, LastError: "x"})}}},
			want: dispatches(2),
		},
		{
			name: "escalate: the first passed, it is chosen at once",
			v: View{Parallel: 4, Policy: PolicyEscalate, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 1, Held: 1})}}},
			want: []Action{ActChoose{ID: "a"}},
		},
		{
			name: "an attempt still under way: nothing is chosen",
			v: View{Parallel: 4, Running: 1, Policy: PolicyParallel, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Live: 1, Held: 2})}}},
			want: nil,
		},
		{
			name: "none passed: the task fails as any task",
			v: View{Parallel: 4, MaxRetries: 0, Policy: PolicyParallel, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Attempts: 3, LastError: "FAIL"})}}},
			want: []Action{ActFail{ID: "a", Reason: "FAIL"}, ActDecide{ID: "a", Action: Continue, Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "the budget stops the running attempts together",
			v: View{Parallel: 4, Running: 2, Budget: "token budget reached", Policy: PolicyParallel, Series: []string{"a"},
				Flights: map[string]Flight{"a@2": {ID: "a", Attempt: 2}, "a@3": {ID: "a", Attempt: 3}},
				Graph:   seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Live: 2})}}},
			want: []Action{ActStopAttempts{ID: "a", Reason: "stopped together: token budget reached"}},
		},
		{
			name: "the budget: a series with none held goes back to pending",
			v: View{Parallel: 4, Budget: "token budget reached", Policy: PolicyParallel, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, LastError: "stopped together: token budget reached"})}}},
			want: []Action{ActRequeue{ID: "a", Note: "stopped by the budget (token budget reached) before an attempt passed: its attempts start afresh on resume"}},
		},
		{
			name: "the budget: a held attempt is still merged",
			v: View{Parallel: 4, Budget: "token budget reached", Policy: PolicyParallel, Series: []string{"a"},
				Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Held: 1})}}},
			want: []Action{ActChoose{ID: "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.v, EvSettle{})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestAttemptEvents(t *testing.T) {
	g := seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Live: 3})}}
	flights := map[string]Flight{"a@1": {ID: "a", Attempt: 1}, "a@2": {ID: "a", Attempt: 2}}
	v := View{Graph: g, RunID: "r", Flights: flights}
	tests := []struct {
		name string
		v    View
		ev   Event
		want []Action
	}{
		{"a completed attempt is checked", v, EvReport{ID: "a", Key: "a@2", Report: Report{RunID: "r", Attempt: 2, Status: ReportCompleted}},
			[]Action{ActRecord{ID: "a", Key: "a@2"}, ActCheck{ID: "a", Attempt: 2}}},
		{"a failed attempt ends, not the task", v, EvReport{ID: "a", Key: "a@1", Report: Report{RunID: "r", Attempt: 1, Status: "failed", Error: "gave up"}},
			[]Action{ActRecord{ID: "a", Key: "a@1"}, ActEndAttempt{ID: "a", Attempt: 1, Reason: "the agent reported failure: gave up"}}},
		{"a stale report under the stem is dropped", v, EvReport{ID: "a", Key: "a@2", Report: Report{RunID: "old", Attempt: 2, Status: ReportCompleted}},
			[]Action{ActDropStaleReport{ID: "a@2", RunID: "old", Attempt: 2, Want: 2}}},
		{"a failed check ends the attempt", v, EvChecked{ID: "a", Attempt: 2, Failure: "FAIL"},
			[]Action{ActEndAttempt{ID: "a", Attempt: 2, Reason: "FAIL"}}},
		{"a passing check waits for the others", v, EvChecked{ID: "a", Attempt: 2}, nil},
		{"first_pass_wins: a passing check wins at once", View{Graph: g, FirstPassWins: true, Flights: flights}, EvChecked{ID: "a", Attempt: 2},
			[]Action{ActStopAttempts{ID: "a", Reason: "attempt 2 passed first (first_pass_wins)"}, ActChoose{ID: "a"}}},
		{"one attempt's agent died: only it ends", v, EvAgentDied{TaskID: "a", Attempt: 1},
			[]Action{ActFreeClaim{ID: "a@1"}, ActStopWaiting{ID: "a@1"}, ActEndAttempt{ID: "a", Attempt: 1, Reason: "the coding agent died (<nil>)"}}},
		{"the gate rejected the best: the next-ranked is tried",
			View{Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Held: 1, Chosen: true})}}},
			EvMerged{ID: "a", Attempt: 2, Failure: "FAIL on the merged tree"},
			[]Action{ActEndAttempt{ID: "a", Attempt: 2, Reason: "FAIL on the merged tree"}, ActChoose{ID: "a"}}},
		{"escalate: the first, rejected by the gate, lets the rest start",
			View{Policy: PolicyEscalate, Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 1, Chosen: true})}}},
			EvMerged{ID: "a", Attempt: 1, Failure: "FAIL on the merged tree"},
			[]Action{ActEndAttempt{ID: "a", Attempt: 1, Reason: "FAIL on the merged tree"}}},
		{"a fault of the machine in a check halts, the attempt not ended", v, EvChecked{ID: "a", Attempt: 2, Failure: "disk", Env: errText2("disk full")},
			[]Action{ActHalt{Err: errText2("disk full")}}},
		{"a fault of the machine in the winner's merge halts, the candidate kept",
			View{Graph: seriesGraph{tasks: map[string]Task{"a": several(Task{Started: 3, Chosen: true})}}},
			EvMerged{ID: "a", Attempt: 2, Failure: "disk", Env: errText2("disk full")},
			[]Action{ActHalt{Err: errText2("disk full")}}},
		{"an attempt past its deadline is abandoned by its key", View{Graph: g, Flights: map[string]Flight{"a@2": {ID: "a", Attempt: 2}}},
			EvTick{Now: time.Unix(1000, 0)}, []Action{ActAbandon{ID: "a", Key: "a@2", Attempt: 2}}},
		{"its time-out ends the attempt", v, EvTimedOut{ID: "a", Key: "a@2", Attempt: 2},
			[]Action{ActEndAttempt{ID: "a", Attempt: 2, Reason: "no report within the task timeout"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.v, tt.ev)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// errText2 is a comparable error for the tables.
type errText2 string

func (e errText2) Error() string { return string(e) }
