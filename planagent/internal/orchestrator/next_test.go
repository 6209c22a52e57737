package orchestrator

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// graphOf builds a graph from "id:status:attempts" tasks; a task's
// dependencies are given in deps.
func graphOf(t *testing.T, deps map[string][]string, tasks ...taskgraph.Task) *taskgraph.Graph {
	t.Helper()
	for i := range tasks {
		tasks[i].Description = "do " + tasks[i].ID
		tasks[i].Dependencies = deps[tasks[i].ID]
	}
	g, err := taskgraph.New(tasks)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func tk(id string, s taskgraph.Status, attempts int) taskgraph.Task {
	return taskgraph.Task{ID: id, Status: s, Attempts: attempts}
}

// reportA is task a's first attempt's report with status s.
func reportA(s protocol.Status) *protocol.Report {
	return &protocol.Report{ID: "a", RunID: "r", Attempt: 1, Status: s, Summary: "did a", Error: "it broke"}
}

// TestNext is the decision table: for a graph, what is under way and an
// event, exactly which actions follow.
func TestNext(t *testing.T) {
	t.Parallel()
	const (
		P  = taskgraph.Pending
		IP = taskgraph.InProgress
		C  = taskgraph.Completed
		F  = taskgraph.Failed
	)
	chain := map[string][]string{"b": {"a"}}
	boom := errors.New("oom")
	errDiskFull := errors.New("no space left on device")
	rep := reportA(protocol.StatusCompleted)
	later := reportA(protocol.StatusCompleted)
	later.Attempt = 2
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	failedRep := reportA(protocol.StatusFailed)
	interrupted := reportA(protocol.StatusInterrupted)
	budgetRep := reportA(protocol.StatusFailed)
	budgetRep.Error, budgetRep.Reason = "budget: stopped after 900 tokens", protocol.ReasonBudget
	configRep := reportA(protocol.StatusFailed)
	configRep.Error, configRep.Reason = "the model wrote a tool call as text", protocol.ReasonConfig
	withAcceptance := func(g *taskgraph.Graph) *taskgraph.Graph {
		ts := g.Tasks()
		ts[0].Acceptance = []string{"go test ./..."}
		ng, _ := taskgraph.New(ts)
		return ng
	}

	tests := []struct {
		name  string
		g     func(t *testing.T) *taskgraph.Graph
		v     next.View // g, parallel and maxRetries filled in when zero
		ev    event
		want  []next.Action
		check func(t *testing.T, got []next.Action)
		// replan: the tasks a replan verdict carries to the executor, validated
		replan []taskgraph.Task
	}{
		{
			name: "settle dispatches ready tasks up to the parallel limit",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", P, 0), tk("b", P, 0), tk("c", P, 0))
			},
			v:    next.View{Parallel: 2},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActDispatch{ID: "a"}, next.ActDispatch{ID: "b"}},
		},
		{
			name: "settle counts what is already running against the limit",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0), tk("c", P, 0))
			},
			v:    next.View{Parallel: 2, Running: 1},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActDispatch{ID: "b"}},
		},
		{
			name: "settle counts the tasks waiting for their merge against the limit",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1), tk("c", IP, 1), tk("d", P, 0), tk("e", P, 0))
			},
			v:    next.View{Parallel: 4, Running: 1, Accepting: 2},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActDispatch{ID: "d"}},
		},
		{
			name: "settle waits for dependencies",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", IP, 1), tk("b", P, 0)) },
			v:    next.View{Parallel: 4, Running: 1},
			ev:   next.EvSettle{},
			want: nil,
		},
		{
			name: "nothing starts while the decider is asked",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1), tk("b", P, 0)) },
			v:    next.View{Parallel: 2, Deciding: 1},
			ev:   next.EvSettle{},
			want: nil,
		},
		{
			name: "acceptance under way keeps the run open",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Accepting: 1},
			ev:   next.EvSettle{},
			want: nil,
		},
		{
			name: "all completed finishes the run completed",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", C, 1)) },
			ev:   next.EvSettle{},
			want: []next.Action{next.ActFinish{Status: next.RunCompleted}},
		},
		{
			name: "a failed task finishes the run failed",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", C, 1), tk("b", F, 2)) },
			ev:   next.EvSettle{},
			want: []next.Action{next.ActFinish{Status: next.RunFailed}},
		},
		{
			name: "aborted: no dispatch, the run ends aborted once nothing runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1), tk("b", P, 0)) },
			v:    next.View{Aborted: true},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActFinish{Status: next.RunAborted}},
		},
		{
			name: "a reached budget starts nothing while a task runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    next.View{Parallel: 2, Running: 1, Budget: "token budget reached"},
			ev:   next.EvSettle{},
			want: nil,
		},
		{
			name: "a budget just reached is announced once, and pauses the run once nothing runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", P, 0)) },
			v:    next.View{Budget: "token budget reached", BudgetNew: true},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActNoteBudget{Reason: "token budget reached"}, next.ActFinish{Status: next.RunPaused, Paused: "token budget reached"}},
		},
		{
			name: "a budget just reached while a task runs is announced, nothing starts",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    next.View{Parallel: 2, Running: 1, Budget: "token budget reached", BudgetNew: true},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActNoteBudget{Reason: "token budget reached"}},
		},
		{
			name: "a reached budget pauses the run once nothing runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", P, 0)) },
			v:    next.View{Budget: "token budget reached"},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActFinish{Status: next.RunPaused, Paused: "token budget reached"}},
		},
		{
			name: "a reached budget with every task done ends the run as usual",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", C, 1)) },
			v:    next.View{Budget: "token budget reached"},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActFinish{Status: next.RunCompleted}},
		},
		{
			name: "a task stopped at its budget fails with the reason budget",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{MaxRetries: 1},
			ev:   reported{ID: "a", Report: budgetRep},
			want: []next.Action{next.ActRecord{ID: "a"},
				next.ActFail{ID: "a", Reason: "budget: the agent passed the task's token budget: budget: stopped after 900 tokens"},
				next.ActDecide{ID: "a", Action: "retry", Reason: "attempts left"}, next.ActRetry{ID: "a"}},
		},
		{
			name: "a configuration error requeues the task without a decision and stops the run",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    next.View{MaxRetries: 3, Decider: true},
			ev:   reported{ID: "a", Report: configRep},
			want: []next.Action{next.ActRecord{ID: "a"},
				next.ActRequeue{ID: "a", Note: "stopped by a configuration error: the model wrote a tool call as text"},
				next.ActStopConfig{Reason: "the model wrote a tool call as text"}},
		},
		{
			name: "a stopped run starts nothing and pauses once idle",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", P, 1), tk("b", P, 0)) },
			v:    next.View{Parallel: 2, Budget: "configuration error: tool call as text"},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActFinish{Status: next.RunPaused, Paused: "configuration error: tool call as text"}},
		},
		{
			name: "a completed report without acceptance completes the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   reported{ID: "a", Report: rep},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "a completed report with acceptance runs it first",
			g:    func(t *testing.T) *taskgraph.Graph { return withAcceptance(graphOf(t, nil, tk("a", IP, 1))) },
			ev:   reported{ID: "a", Report: rep},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActAccept{ID: "a"}},
		},
		{
			name: "passed acceptance completes with the recorded result",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   next.EvAccepted{ID: "a", Summary: "did a"},
			want: []next.Action{next.ActComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "failed acceptance fails the task; without a decider it retries while attempts are left",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{MaxRetries: 1},
			ev:   next.EvAccepted{ID: "a", Failure: "exit 1"},
			want: []next.Action{next.ActFail{ID: "a", Reason: "exit 1"}, next.ActDecide{ID: "a", Action: "retry", Reason: "attempts left"}, next.ActRetry{ID: "a"}},
		},
		{
			name: "a task of 3 attempts fails acceptance: the next attempt starts without asking the decider",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, taskgraph.Task{ID: "a", Status: IP, Attempts: 1, BestOf: 3})
			},
			v:  next.View{MaxRetries: 0, Decider: true},
			ev: next.EvAccepted{ID: "a", Failure: "exit 1"},
			want: []next.Action{next.ActFail{ID: "a", Reason: "exit 1"}, next.ActDecide{ID: "a", Action: "retry", Reason: "attempt 2 of 3 (attempts)"},
				next.ActRetry{ID: "a"}},
		},
		{
			name: "a task of 3 attempts whose third failed: the decider is asked with none left at --max-retries 0",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, taskgraph.Task{ID: "a", Status: IP, Attempts: 3, BestOf: 3})
			},
			v:    next.View{MaxRetries: 0, Decider: true},
			ev:   next.EvAccepted{ID: "a", Failure: "exit 1"},
			want: []next.Action{next.ActFail{ID: "a", Reason: "exit 1"}, next.ActAsk{ID: "a", Error: "exit 1", PlanSummary: "[>] a: do a\n", AttemptsLeft: 0}},
		},
		{
			name: "a failed report with no retries left continues without the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 2)) },
			v:    next.View{MaxRetries: 1},
			ev:   reported{ID: "a", Report: failedRep},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActFail{ID: "a", Reason: "the agent reported failure: it broke"},
				next.ActDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "a report of an earlier attempt is dropped as stale, the task still waits",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 2)) },
			v:    next.View{Flights: map[string]next.Flight{"a": {Attempt: 2}}},
			ev:   reported{ID: "a", Report: rep},
			want: []next.Action{next.ActDropStaleReport{ID: "a", RunID: "r", Attempt: 1, Want: 2}},
		},
		{
			name: "a report of another run is dropped as stale",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{RunID: "r2", Flights: map[string]next.Flight{"a": {Attempt: 1}}},
			ev:   reported{ID: "a", Report: rep},
			want: []next.Action{next.ActDropStaleReport{ID: "a", RunID: "r", Attempt: 1, Want: 1}},
		},
		{
			name: "a later attempt's report answers (a watcher retook the command)",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Flights: map[string]next.Flight{"a": {Attempt: 1}}},
			ev:   reported{ID: "a", Report: later},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "an unreadable report stops the wait and fails the attempt",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{MaxRetries: 1, Flights: map[string]next.Flight{"a": {Attempt: 1}}},
			ev:   next.EvBadReport{ID: "a", Err: errors.New("torn")},
			want: []next.Action{next.ActStopWaiting{ID: "a"}, next.ActFail{ID: "a", Reason: "unreadable report: torn"},
				next.ActDecide{ID: "a", Action: "retry", Reason: "attempts left"}, next.ActRetry{ID: "a"}},
		},
		{
			name: "a tick abandons the attempts past their deadline, once each, in id order",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1), tk("c", IP, 1))
			},
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"c": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Minute)},
				"a": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Minute)},
				"b": {Attempt: 1, Launched: t0, Deadline: t0.Add(2 * time.Minute)}}},
			ev:   next.EvTick{Now: t0.Add(time.Minute + time.Second), Heartbeat: t0.Add(time.Minute)},
			want: []next.Action{next.ActAbandon{ID: "a"}, next.ActAbandon{ID: "c"}},
		},
		{
			name: "a tick at the deadline abandons nothing",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"a": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Minute)}}},
			ev:   next.EvTick{Now: t0.Add(time.Minute), Heartbeat: t0.Add(time.Minute)},
			want: nil,
		},
		{
			name: "a watcher silent for the heartbeat timeout while a task waited that long is stopped",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"a": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Hour)},
				"b": {Attempt: 1, Launched: t0.Add(40 * time.Second), Deadline: t0.Add(time.Hour)}}},
			ev:   next.EvTick{Now: t0.Add(45 * time.Second), Heartbeat: t0.Add(14 * time.Second)},
			want: []next.Action{next.ActStopSilentWatcher{Silent: 30 * time.Second}},
		},
		{
			name: "no heartbeat at all is a silent watcher",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"a": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Hour)}}},
			ev:   next.EvTick{Now: t0.Add(30 * time.Second)},
			want: []next.Action{next.ActStopSilentWatcher{Silent: 30 * time.Second}},
		},
		{
			name: "a heartbeat as old as the timeout is still alive",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"a": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Hour)}}},
			ev:   next.EvTick{Now: t0.Add(45 * time.Second), Heartbeat: t0.Add(15 * time.Second)},
			want: nil,
		},
		{
			name: "a task launched less than the heartbeat timeout ago gets the time to beat",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"a": {Attempt: 1, Launched: t0.Add(20 * time.Second), Deadline: t0.Add(time.Hour)}}},
			ev:   next.EvTick{Now: t0.Add(45 * time.Second)},
			want: nil,
		},
		{
			name: "with nothing in flight a silent watcher is left alone",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", P, 0)) },
			v:    next.View{HeartbeatTimeout: 30 * time.Second},
			ev:   next.EvTick{Now: t0.Add(time.Hour)},
			want: nil,
		},
		{
			name: "a timed-out task is abandoned, not counted as waiting on the watcher",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v: next.View{HeartbeatTimeout: 30 * time.Second, Flights: map[string]next.Flight{
				"a": {Attempt: 1, Launched: t0, Deadline: t0.Add(time.Minute)}}},
			ev:   next.EvTick{Now: t0.Add(2 * time.Minute)},
			want: []next.Action{next.ActAbandon{ID: "a"}},
		},
		{
			name: "settle starts the merge queue's first attempt when no merge runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true, Accepting: 2, MergeNext: "b"},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActStartMerge{ID: "b"}},
		},
		{
			name: "settle starts no merge while one runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true, Accepting: 2, MergeNext: "b", Merging: true},
			ev:   next.EvSettle{},
			want: nil,
		},
		{
			name: "a resumed attempt whose report is waiting is only watched",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   next.EvResumedInFlight{ID: "a", Report: true, Command: true},
			want: nil,
		},
		{
			name: "a resumed attempt a watcher has claimed is only watched",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   next.EvResumedInFlight{ID: "a", Claim: true, Command: true},
			want: nil,
		},
		{
			name: "a resumed attempt with its command written is launched again",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   next.EvResumedInFlight{ID: "a", Command: true},
			want: []next.Action{next.ActRelaunch{ID: "a"}},
		},
		{
			name: "a resumed attempt the crash left without a command gets it (and its copy) again, then is launched",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   next.EvResumedInFlight{ID: "a"},
			want: []next.Action{next.ActResend{ID: "a"}, next.ActRelaunch{ID: "a"}},
		},
		{
			name: "an interrupted merge whose branch reached its target is finished, then completes",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvInterruptedMerge{ID: "a", Head: "c2", Target: "c2", Checkpoint: "c1", Summary: "did a", Acceptance: "ok"},
			want: []next.Action{next.ActFinishMerge{ID: "a", Target: "c2"}, next.ActComplete{ID: "a", Summary: "did a", Acceptance: "ok"}},
		},
		{
			name: "an interrupted merge whose branch had not moved yet is finished too",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvInterruptedMerge{ID: "a", Head: "c1", Target: "c2", Checkpoint: "c1"},
			want: []next.Action{next.ActFinishMerge{ID: "a", Target: "c2"}, next.ActComplete{ID: "a"}},
		},
		{
			name: "an interrupted merge whose branch has the user's commits on top is finished on top of them",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvInterruptedMerge{ID: "a", Head: "mine", Target: "c2", Checkpoint: "c1", Ahead: true, Summary: "did a"},
			want: []next.Action{next.ActFinishMerge{ID: "a", Target: "c2"}, next.ActComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "an interrupted merge whose branch someone else moved is forgotten: merged again from the report",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvInterruptedMerge{ID: "a", Head: "theirs", Target: "c2", Checkpoint: "c1"},
			want: []next.Action{next.ActForgetMerge{ID: "a", Head: "theirs"}},
		},
		{
			name: "settle starts a merge before it dispatches (the merge runs while the loop makes copies)",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    next.View{Parallel: 2, Isolated: true, Accepting: 1, MergeNext: "a"},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActStartMerge{ID: "a"}, next.ActDispatch{ID: "b"}},
		},
		{
			name: "settle counts the attempts whose copies are being made against the limit, and waits for them",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1), tk("c", P, 0), tk("d", P, 0))
			},
			v:    next.View{Parallel: 3, Isolated: true, Copying: 2},
			ev:   next.EvSettle{},
			want: []next.Action{next.ActDispatch{ID: "c"}},
		},
		{
			name: "a run with copies being made does not end",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Parallel: 1, Isolated: true, Copying: 1},
			ev:   next.EvSettle{},
			want: nil,
		},
		{
			name: "the attempts whose copies are made are launched together",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true},
			ev:   next.EvCopied{IDs: []string{"a", "b"}},
			want: []next.Action{next.ActLaunch{ID: "a"}, next.ActLaunch{ID: "b"}},
		},
		{
			name: "a copy that cannot be made halts the run",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Parallel: 1, Isolated: true},
			ev:   next.EvCopied{IDs: []string{"a"}, Err: errDiskFull},
			want: []next.Action{next.ActHalt{Err: errDiskFull}},
		},
		{
			name: "an attempt copied after an abort is not launched but goes back to pending",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Parallel: 1, Isolated: true, Aborted: true},
			ev:   next.EvCopied{IDs: []string{"a"}},
			want: []next.Action{next.ActRequeue{ID: "a", Note: "not started: the run was aborted"}},
		},
		{
			name: "the queue's next merge starts onto a merged result while the workspace moves to it",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true, Accepting: 1, MergeNext: "b", Head: "h0"},
			ev:   next.EvMerged{ID: "a", Onto: "h0", Candidate: "h1", Changed: true, Summary: "did a"},
			want: []next.Action{next.ActStartMerge{ID: "b", Onto: "h1"}, next.ActComplete{ID: "a", Summary: "did a", Commit: "h1"}},
		},
		{
			name: "after a merge that changed nothing the next goes onto the integration state",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true, Accepting: 1, MergeNext: "b", Head: "h0"},
			ev:   next.EvMerged{ID: "a", Onto: "h0", Candidate: "h0", Summary: "did a"},
			want: []next.Action{next.ActStartMerge{ID: "b", Onto: "h0"}, next.ActComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "a merge onto a state the workspace never reached (its move failed) is made again",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1), tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true, Head: "h0"},
			ev:   next.EvMerged{ID: "b", Onto: "h1", Candidate: "h2", Changed: true},
			want: []next.Action{next.ActRemerge{ID: "b"}},
		},
		{
			name: "a conflict found onto a state never reached is no conflict yet: merged again",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("b", IP, 1)) },
			v:    next.View{Parallel: 2, Isolated: true, Head: "h0"},
			ev:   next.EvMerged{ID: "b", Onto: "h1", Conflict: []string{"x.go"}},
			want: []next.Action{next.ActRemerge{ID: "b"}},
		},
		{
			name: "with a decider a failure is asked about, with the attempts left",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{MaxRetries: 2, Decider: true},
			ev:   next.EvTimedOut{ID: "a"},
			check: func(t *testing.T, got []next.Action) {
				if len(got) != 2 || got[0] != (next.ActFail{ID: "a", Reason: "no report within the task timeout"}) {
					t.Fatalf("got %#v", got)
				}
				ask, ok := got[1].(next.ActAsk)
				if !ok || ask.ID != "a" || ask.AttemptsLeft != 2 || ask.Error != "no report within the task timeout" || !strings.Contains(ask.PlanSummary, "do a") {
					t.Fatalf("ask %#v", got[1])
				}
			},
		},
		{
			name: "an interrupted attempt goes again without asking",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Decider: true},
			ev:   reported{ID: "a", Report: interrupted},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActRequeue{ID: "a", Note: "interrupted"}},
		},
		{
			name: "interruptions past the spare attempts fail the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1+next.SpareAttempts)) },
			ev:   reported{ID: "a", Report: interrupted},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActFail{ID: "a", Reason: "interrupted too many times"},
				next.ActDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "a dead shared watcher: its tasks go again and it is restarted",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Flights: map[string]next.Flight{"b": {Attempt: 1}, "a": {Attempt: 1}}},
			ev:   next.EvAgentDied{Cause: boom},
			want: []next.Action{next.ActFreeClaim{ID: "a"}, next.ActStopWaiting{ID: "a"}, next.ActRequeue{ID: "a", Note: "the coding agent died (oom)"},
				next.ActFreeClaim{ID: "b"}, next.ActStopWaiting{ID: "b"}, next.ActRequeue{ID: "b", Note: "the coding agent died (oom)"}, next.ActRestart{Cause: boom}},
		},
		{
			name: "a task that reported before its watcher died is collected as usual",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Flights: map[string]next.Flight{"a": {Attempt: 1}, "b": {Attempt: 1}}},
			ev:   next.EvAgentDied{Cause: boom, Reported: []string{"a"}},
			want: []next.Action{next.ActFreeClaim{ID: "a"},
				next.ActFreeClaim{ID: "b"}, next.ActStopWaiting{ID: "b"}, next.ActRequeue{ID: "b", Note: "the coding agent died (oom)"}, next.ActRestart{Cause: boom}},
		},
		{
			name: "an attempt's agent dying takes only its task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			v:    next.View{Flights: map[string]next.Flight{"a": {Attempt: 1}, "b": {Attempt: 1}}},
			ev:   next.EvAgentDied{TaskID: "b", Attempt: 1, Cause: boom},
			want: []next.Action{next.ActFreeClaim{ID: "b"}, next.ActStopWaiting{ID: "b"}, next.ActRequeue{ID: "b", Note: "the coding agent died (oom)"}},
		},
		{
			name: "an earlier attempt's agent found dead once the next runs takes nothing",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 2)) },
			v:    next.View{Flights: map[string]next.Flight{"a": {Attempt: 2}}},
			ev:   next.EvAgentDied{TaskID: "a", Attempt: 1, Cause: boom},
			want: []next.Action{next.ActNoteLateDeath{ID: "a", Attempt: 1, Cause: boom}},
		},
		{
			name: "the death of an agent whose task is no longer in flight takes nothing",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", C, 1)) },
			ev:   next.EvAgentDied{TaskID: "a", Attempt: 1, Cause: boom},
			want: nil,
		},
		{
			name: "a task that kills every agent fails past the spare attempts",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1+next.SpareAttempts)) },
			v:    next.View{Flights: map[string]next.Flight{"a": {Attempt: 1 + next.SpareAttempts}}},
			ev:   next.EvAgentDied{TaskID: "a", Cause: boom},
			want: []next.Action{next.ActFreeClaim{ID: "a"}, next.ActStopWaiting{ID: "a"}, next.ActFail{ID: "a", Reason: "the coding agent died 3 times while running it; last: oom"},
				next.ActDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "with checkpoints a completed report goes to the merge queue (acceptance runs there)",
			g:    func(t *testing.T) *taskgraph.Graph { return withAcceptance(graphOf(t, nil, tk("a", IP, 1))) },
			v:    next.View{Isolated: true},
			ev:   reported{ID: "a", Report: rep},
			want: []next.Action{next.ActRecord{ID: "a"}, next.ActMerge{ID: "a"}},
		},
		{
			name: "a merged attempt completes at its commit",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvMerged{ID: "a", Candidate: "c2", Changed: true, Summary: "did a"},
			want: []next.Action{next.ActComplete{ID: "a", Summary: "did a", Commit: "c2"}},
		},
		{
			name: "an attempt that changed nothing completes without a commit",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvMerged{ID: "a", Candidate: "c1", Summary: "nothing to do"},
			want: []next.Action{next.ActComplete{ID: "a", Summary: "nothing to do"}},
		},
		{
			name: "a merge conflict redoes the task on the new base, naming the files",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true, MaxRetries: 1, Decider: true},
			ev:   next.EvMerged{ID: "a", Conflict: []string{"notes.txt"}},
			check: func(t *testing.T, got []next.Action) {
				if len(got) != 3 {
					t.Fatalf("got %#v", got)
				}
				retry, ok := got[2].(next.ActRetry)
				if _, failed := got[0].(next.ActFail); !failed || !ok || len(retry.Hints) != 1 || !strings.Contains(retry.Hints[0], "notes.txt") {
					t.Fatalf("got %#v", got)
				}
			},
		},
		{
			name: "a merge conflict with no attempts left is a failure like any other",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true},
			ev:   next.EvMerged{ID: "a", Conflict: []string{"notes.txt"}},
			want: []next.Action{next.ActFail{ID: "a", Reason: "merge conflict in notes.txt with work merged since the attempt started"},
				next.ActDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "failed acceptance on the merged tree fails the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    next.View{Isolated: true, MaxRetries: 1},
			ev:   next.EvMerged{ID: "a", Failure: "acceptance command \"go test\" exited 1"},
			want: []next.Action{next.ActFail{ID: "a", Reason: "acceptance command \"go test\" exited 1"}, next.ActDecide{ID: "a", Action: "retry", Reason: "attempts left"}, next.ActRetry{ID: "a"}},
		},
		{
			name: "a retry verdict carries its hints",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1)) },
			v:    next.View{MaxRetries: 1},
			ev:   decided{ID: "a", Verdict: Verdict{Action: "retry", Reason: "fixable", Hints: []string{"import fmt"}}},
			want: []next.Action{next.ActDecide{ID: "a", Action: "retry", Reason: "fixable", Hints: []string{"import fmt"}}, next.ActRetry{ID: "a", Hints: []string{"import fmt"}}},
		},
		{
			name: "a retry verdict past the budget becomes continue",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 2)) },
			v:    next.View{MaxRetries: 1},
			ev:   decided{ID: "a", Verdict: Verdict{Action: "retry", Reason: "fixable"}},
			want: []next.Action{next.ActDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries); fixable"}},
		},
		{
			name: "a valid replan replaces the unfinished tasks",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, chain, tk("a", F, 1), tk("b", taskgraph.Skipped, 0))
			},
			ev: decided{ID: "a", Verdict: Verdict{Action: "replan", Reason: "split", Replan: []plan.Task{
				{ID: "a1", Description: "half"}, {ID: "a2", Description: "other half", Dependencies: []string{"a1"}}}}},
			want: []next.Action{next.ActDecide{ID: "a", Action: "replan", Reason: "split"}, next.ActReplan{ID: "a"}},
			replan: []taskgraph.Task{
				{ID: "a1", Description: "half"}, {ID: "a2", Description: "other half", Dependencies: []string{"a1"}}},
		},
		{
			name: "a replan reusing a completed id is refused",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("done", C, 1), tk("a", F, 1)) },
			ev:   decided{ID: "a", Verdict: Verdict{Action: "replan", Reason: "x", Replan: []plan.Task{{ID: "done", Description: "again"}}}},
			want: []next.Action{next.ActDecide{ID: "a", Action: "continue", Reason: `replan rejected (task "done" is already completed and cannot be replaced: give the new task another id); continuing without a`}},
		},
		{
			name: "abort",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1)) },
			ev:   decided{ID: "a", Verdict: Verdict{Action: "abort", Reason: "hopeless"}},
			want: []next.Action{next.ActDecide{ID: "a", Action: "abort", Reason: "hopeless"}, next.ActAbort{}},
		},
		{
			name: "an unusable answer continues and says why",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1)) },
			ev:   decided{ID: "a", Verdict: Verdict{Action: "continue", Invalid: "the model did not call decide"}},
			want: []next.Action{next.ActDecide{ID: "a", Action: "continue", Reason: "the decision was unusable: the model did not call decide", Invalid: "the model did not call decide"}},
		},
		{
			name: "a verdict about a task no longer failed is ignored",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", P, 1)) },
			ev:   decided{ID: "a", Verdict: Verdict{Action: "retry"}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			g := tt.g(t)
			v.Graph = graphView{g, 1, nil}
			if v.Parallel == 0 {
				v.Parallel = 1
			}
			if v.RunID == "" {
				v.RunID = "r"
			}
			before := g.Tasks()
			src, ev := nextEvent(g, tt.ev)
			got := next.Decide(v, ev)
			if !reflect.DeepEqual(g.Tasks(), before) {
				t.Fatal("next changed the graph")
			}
			if d, ok := src.(decided); ok && !reflect.DeepEqual(d.tasks, tt.replan) {
				t.Errorf("replan tasks %#v, want %#v", d.tasks, tt.replan)
			}
			if tt.check != nil {
				tt.check(t, got)
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("next =\n  %#v\nwant\n  %#v", got, tt.want)
			}
		})
	}
}

func TestBudgetExceeded(t *testing.T) {
	t.Parallel()
	perToken := func(u protocol.Tokens) float64 { return float64(u.Prompt)*1e-6 + float64(u.Completion)*2e-6 }
	for _, tt := range []struct {
		b       Budget
		p, c    int
		elapsed time.Duration
		want    string
	}{
		{Budget{}, 1e9, 1e9, time.Hour, ""},
		{Budget{Tokens: 1000}, 600, 399, 0, ""},
		{Budget{Tokens: 1000}, 600, 400, 0, "token budget reached: 1000 of 1000 tokens used"},
		{Budget{Time: time.Minute}, 0, 0, 59 * time.Second, ""},
		{Budget{Time: time.Minute}, 0, 0, time.Minute, "time budget reached: ran 1m0s of 1m0s"},
		{Budget{USD: 0.01, Cost: perToken}, 4000, 2999, 0, ""},
		{Budget{USD: 0.01, Cost: perToken}, 4000, 3000, 0, "cost budget reached: $0.0100 of $0.01"},
	} {
		if got := tt.b.exceeded(protocol.Tokens{Prompt: tt.p, Completion: tt.c}, tt.elapsed).text; got != tt.want {
			t.Errorf("%+v with %d/%d tokens, %s: %q, want %q", tt.b, tt.p, tt.c, tt.elapsed, got, tt.want)
		}
	}
}
