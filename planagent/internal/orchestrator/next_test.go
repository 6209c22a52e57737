package orchestrator

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
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

// reportA is task a's first-attempt report with status s: the table's
// reports are all about task a.
func reportA(s protocol.Status) *protocol.Report {
	return &protocol.Report{ID: "a", RunID: "r", Attempt: 1, Status: s, Summary: "did a", Error: "it broke"}
}

// TestNext is the decision table: for a graph, what is under way and an
// event, exactly which actions follow.
func TestNext(t *testing.T) {
	const (
		P  = taskgraph.Pending
		IP = taskgraph.InProgress
		C  = taskgraph.Completed
		F  = taskgraph.Failed
	)
	chain := map[string][]string{"b": {"a"}}
	boom := errors.New("oom")
	rep := reportA(protocol.StatusCompleted)
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
		v     view // g, parallel and maxRetries filled in when zero
		ev    event
		want  []action
		check func(t *testing.T, got []action)
	}{
		{
			name: "settle dispatches ready tasks up to the parallel limit",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", P, 0), tk("b", P, 0), tk("c", P, 0))
			},
			v:    view{parallel: 2},
			ev:   evSettle{},
			want: []action{actDispatch{ID: "a"}, actDispatch{ID: "b"}},
		},
		{
			name: "settle counts what is already running against the limit",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0), tk("c", P, 0))
			},
			v:    view{parallel: 2, running: 1},
			ev:   evSettle{},
			want: []action{actDispatch{ID: "b"}},
		},
		{
			name: "settle counts the tasks waiting for their merge against the limit",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1), tk("c", IP, 1), tk("d", P, 0), tk("e", P, 0))
			},
			v:    view{parallel: 4, running: 1, accepting: 2},
			ev:   evSettle{},
			want: []action{actDispatch{ID: "d"}},
		},
		{
			name: "settle waits for dependencies",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", IP, 1), tk("b", P, 0)) },
			v:    view{parallel: 4, running: 1},
			ev:   evSettle{},
			want: nil,
		},
		{
			name: "nothing starts while the decider is asked",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1), tk("b", P, 0)) },
			v:    view{parallel: 2, deciding: 1},
			ev:   evSettle{},
			want: nil,
		},
		{
			name: "acceptance under way keeps the run open",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{accepting: 1},
			ev:   evSettle{},
			want: nil,
		},
		{
			name: "all completed finishes the run completed",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", C, 1)) },
			ev:   evSettle{},
			want: []action{actFinish{Status: runrecord.RunCompleted}},
		},
		{
			name: "a failed task finishes the run failed",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", C, 1), tk("b", F, 2)) },
			ev:   evSettle{},
			want: []action{actFinish{Status: runrecord.RunFailed}},
		},
		{
			name: "aborted: no dispatch, the run ends aborted once nothing runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1), tk("b", P, 0)) },
			v:    view{aborted: true},
			ev:   evSettle{},
			want: []action{actFinish{Status: runrecord.RunAborted}},
		},
		{
			name: "a reached budget starts nothing while a task runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    view{parallel: 2, running: 1, budget: "token budget reached"},
			ev:   evSettle{},
			want: nil,
		},
		{
			name: "a budget just reached is announced once, and pauses the run once nothing runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", P, 0)) },
			v:    view{budget: "token budget reached", budgetNew: true},
			ev:   evSettle{},
			want: []action{actNoteBudget{Reason: "token budget reached"}, actFinish{Status: runrecord.RunPaused, Paused: "token budget reached"}},
		},
		{
			name: "a budget just reached while a task runs is announced, nothing starts",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    view{parallel: 2, running: 1, budget: "token budget reached", budgetNew: true},
			ev:   evSettle{},
			want: []action{actNoteBudget{Reason: "token budget reached"}},
		},
		{
			name: "a reached budget pauses the run once nothing runs",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", P, 0)) },
			v:    view{budget: "token budget reached"},
			ev:   evSettle{},
			want: []action{actFinish{Status: runrecord.RunPaused, Paused: "token budget reached"}},
		},
		{
			name: "a reached budget with every task done ends the run as usual",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, chain, tk("a", C, 1), tk("b", C, 1)) },
			v:    view{budget: "token budget reached"},
			ev:   evSettle{},
			want: []action{actFinish{Status: runrecord.RunCompleted}},
		},
		{
			name: "a task stopped at its budget fails with the reason budget",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{maxRetries: 1},
			ev:   evReport{ID: "a", Report: budgetRep},
			want: []action{actRecord{ID: "a", Report: budgetRep},
				actFail{ID: "a", Reason: "budget: the agent passed the task's token budget: budget: stopped after 900 tokens"},
				actDecide{ID: "a", Action: "retry", Reason: "attempts left"}, actRetry{ID: "a"}},
		},
		{
			name: "a configuration error requeues the task without a decision and stops the run",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", P, 0)) },
			v:    view{maxRetries: 3, decider: true},
			ev:   evReport{ID: "a", Report: configRep},
			want: []action{actRecord{ID: "a", Report: configRep},
				actRequeue{ID: "a", Note: "stopped by a configuration error: the model wrote a tool call as text"},
				actStopConfig{Reason: "the model wrote a tool call as text"}},
		},
		{
			name: "a stopped run starts nothing and pauses once idle",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", P, 1), tk("b", P, 0)) },
			v:    view{parallel: 2, budget: "configuration error: tool call as text"},
			ev:   evSettle{},
			want: []action{actFinish{Status: runrecord.RunPaused, Paused: "configuration error: tool call as text"}},
		},
		{
			name: "a completed report without acceptance completes the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   evReport{ID: "a", Report: rep},
			want: []action{actRecord{ID: "a", Report: rep}, actComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "a completed report with acceptance runs it first",
			g:    func(t *testing.T) *taskgraph.Graph { return withAcceptance(graphOf(t, nil, tk("a", IP, 1))) },
			ev:   evReport{ID: "a", Report: rep},
			want: []action{actRecord{ID: "a", Report: rep}, actAccept{ID: "a"}},
		},
		{
			name: "passed acceptance completes with the recorded result",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			ev:   evAccepted{ID: "a", Summary: "did a"},
			want: []action{actComplete{ID: "a", Summary: "did a"}},
		},
		{
			name: "failed acceptance fails the task; without a decider it retries while attempts are left",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{maxRetries: 1},
			ev:   evAccepted{ID: "a", Failure: "exit 1"},
			want: []action{actFail{ID: "a", Reason: "exit 1"}, actDecide{ID: "a", Action: "retry", Reason: "attempts left"}, actRetry{ID: "a"}},
		},
		{
			name: "a failed report with no retries left continues without the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 2)) },
			v:    view{maxRetries: 1},
			ev:   evReport{ID: "a", Report: failedRep},
			want: []action{actRecord{ID: "a", Report: failedRep}, actFail{ID: "a", Reason: "the agent reported failure: it broke"},
				actDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "with a decider a failure is asked about, with the attempts left",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{maxRetries: 2, decider: true},
			ev:   evTimedOut{ID: "a"},
			check: func(t *testing.T, got []action) {
				if len(got) != 2 || got[0] != (actFail{ID: "a", Reason: "no report within the task timeout"}) {
					t.Fatalf("got %#v", got)
				}
				ask, ok := got[1].(actAsk)
				if !ok || ask.Failure.AttemptsLeft != 2 || ask.Failure.Task.Status != taskgraph.Failed || ask.Failure.Error == "" {
					t.Fatalf("ask %#v", got[1])
				}
			},
		},
		{
			name: "an interrupted attempt goes again without asking",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{decider: true},
			ev:   evReport{ID: "a", Report: interrupted},
			want: []action{actRecord{ID: "a", Report: interrupted}, actRequeue{ID: "a", Note: "interrupted"}},
		},
		{
			name: "interruptions past the spare attempts fail the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1+spareAttempts)) },
			ev:   evReport{ID: "a", Report: interrupted},
			want: []action{actRecord{ID: "a", Report: interrupted}, actFail{ID: "a", Reason: "interrupted too many times"},
				actDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "a dead shared watcher: its tasks go again and it is restarted",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1), tk("b", IP, 1)) },
			ev:   evAgentDied{IDs: []string{"a", "b"}, Cause: boom, Shared: true},
			want: []action{actRequeue{ID: "a", Note: "the coding agent died (oom)"}, actRequeue{ID: "b", Note: "the coding agent died (oom)"}, actRestart{Cause: boom}},
		},
		{
			name: "a task that kills every agent fails past the spare attempts",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1+spareAttempts)) },
			ev:   evAgentDied{IDs: []string{"a"}, Cause: boom},
			want: []action{actFail{ID: "a", Reason: "the coding agent died 3 times while running it; last: oom"},
				actDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "with checkpoints a completed report goes to the merge queue (acceptance runs there)",
			g:    func(t *testing.T) *taskgraph.Graph { return withAcceptance(graphOf(t, nil, tk("a", IP, 1))) },
			v:    view{isolated: true},
			ev:   evReport{ID: "a", Report: rep},
			want: []action{actRecord{ID: "a", Report: rep}, actMerge{ID: "a"}},
		},
		{
			name: "a merged attempt completes at its commit",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{isolated: true},
			ev:   evMerged{ID: "a", Candidate: "c2", Changed: true, Summary: "did a"},
			want: []action{actComplete{ID: "a", Summary: "did a", Commit: "c2"}},
		},
		{
			name: "an attempt that changed nothing completes without a commit",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{isolated: true},
			ev:   evMerged{ID: "a", Candidate: "c1", Summary: "nothing to do"},
			want: []action{actComplete{ID: "a", Summary: "nothing to do"}},
		},
		{
			name: "a merge conflict redoes the task on the new base, naming the files",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{isolated: true, maxRetries: 1, decider: true},
			ev:   evMerged{ID: "a", Conflict: []string{"notes.txt"}},
			check: func(t *testing.T, got []action) {
				if len(got) != 3 {
					t.Fatalf("got %#v", got)
				}
				retry, ok := got[2].(actRetry)
				if _, failed := got[0].(actFail); !failed || !ok || len(retry.Hints) != 1 || !strings.Contains(retry.Hints[0], "notes.txt") {
					t.Fatalf("got %#v", got)
				}
			},
		},
		{
			name: "a merge conflict with no attempts left is a failure like any other",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{isolated: true},
			ev:   evMerged{ID: "a", Conflict: []string{"notes.txt"}},
			want: []action{actFail{ID: "a", Reason: "merge conflict in notes.txt with work merged since the attempt started"},
				actDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries)"}},
		},
		{
			name: "failed acceptance on the merged tree fails the task",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", IP, 1)) },
			v:    view{isolated: true, maxRetries: 1},
			ev:   evMerged{ID: "a", Failure: "acceptance command \"go test\" exited 1"},
			want: []action{actFail{ID: "a", Reason: "acceptance command \"go test\" exited 1"}, actDecide{ID: "a", Action: "retry", Reason: "attempts left"}, actRetry{ID: "a"}},
		},
		{
			name: "a retry verdict carries its hints",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1)) },
			v:    view{maxRetries: 1},
			ev:   evDecided{ID: "a", Verdict: Verdict{Action: "retry", Reason: "fixable", Hints: []string{"import fmt"}}},
			want: []action{actDecide{ID: "a", Action: "retry", Reason: "fixable", Hints: []string{"import fmt"}}, actRetry{ID: "a", Hints: []string{"import fmt"}}},
		},
		{
			name: "a retry verdict past the budget becomes continue",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 2)) },
			v:    view{maxRetries: 1},
			ev:   evDecided{ID: "a", Verdict: Verdict{Action: "retry", Reason: "fixable"}},
			want: []action{actDecide{ID: "a", Action: "continue", Reason: "retries exhausted (--max-retries); fixable"}},
		},
		{
			name: "a valid replan replaces the unfinished tasks",
			g: func(t *testing.T) *taskgraph.Graph {
				return graphOf(t, chain, tk("a", F, 1), tk("b", taskgraph.Skipped, 0))
			},
			ev: evDecided{ID: "a", Verdict: Verdict{Action: "replan", Reason: "split", Replan: []plan.Task{
				{ID: "a1", Description: "half"}, {ID: "a2", Description: "other half", Dependencies: []string{"a1"}}}}},
			want: []action{actDecide{ID: "a", Action: "replan", Reason: "split"}, actReplan{Tasks: []taskgraph.Task{
				{ID: "a1", Description: "half"}, {ID: "a2", Description: "other half", Dependencies: []string{"a1"}}}}},
		},
		{
			name: "a replan reusing a completed id is refused",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("done", C, 1), tk("a", F, 1)) },
			ev:   evDecided{ID: "a", Verdict: Verdict{Action: "replan", Reason: "x", Replan: []plan.Task{{ID: "done", Description: "again"}}}},
			want: []action{actDecide{ID: "a", Action: "continue", Reason: `replan rejected (task "done" is already completed and cannot be replaced: give the new task another id); continuing without a`}},
		},
		{
			name: "abort",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1)) },
			ev:   evDecided{ID: "a", Verdict: Verdict{Action: "abort", Reason: "hopeless"}},
			want: []action{actDecide{ID: "a", Action: "abort", Reason: "hopeless"}, actAbort{}},
		},
		{
			name: "an unusable answer continues and says why",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", F, 1)) },
			ev:   evDecided{ID: "a", Verdict: Verdict{Action: "continue", Invalid: "the model did not call decide"}},
			want: []action{actDecide{ID: "a", Action: "continue", Reason: "the decision was unusable: the model did not call decide", Invalid: "the model did not call decide"}},
		},
		{
			name: "a verdict about a task no longer failed is ignored",
			g:    func(t *testing.T) *taskgraph.Graph { return graphOf(t, nil, tk("a", P, 1)) },
			ev:   evDecided{ID: "a", Verdict: Verdict{Action: "retry"}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			v.g = tt.g(t)
			if v.parallel == 0 {
				v.parallel = 1
			}
			before := v.g.Tasks()
			got := next(v, tt.ev)
			if !reflect.DeepEqual(v.g.Tasks(), before) {
				t.Fatal("next changed the graph")
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
