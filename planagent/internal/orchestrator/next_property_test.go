package orchestrator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// simRun carries next's actions out on a graph the way the executor does,
// with random answers from the agents, the merge queue and the decider,
// and checks the run's invariants on every step.
type simRun struct {
	rng        *rand.Rand
	g          *taskgraph.Graph
	parallel   int
	maxRetries int
	isolated   bool
	decider    bool
	running    []string // attempts waiting for their report
	accepting  []string // finished, waiting for acceptance or merge
	deciding   []string // failures the decider is asked about
	aborted    bool
	budget     string
	finished   bool
	completed  map[string]int
}

func (s *simRun) view() view {
	return view{g: s.g, running: len(s.running), accepting: len(s.accepting), deciding: len(s.deciding),
		isolated: s.isolated, aborted: s.aborted, parallel: s.parallel, maxRetries: s.maxRetries,
		decider: s.decider, budget: s.budget}
}

// take removes and returns a random element of *ids.
func (s *simRun) take(ids *[]string) string {
	i := s.rng.IntN(len(*ids))
	id := (*ids)[i]
	*ids = slices.Delete(*ids, i, i+1)
	return id
}

// event is a random thing that can happen next, with the bookkeeping the
// observer and the loop do before next sees it; nil when nothing can.
func (s *simRun) event() event {
	var kinds []int
	for k, n := range []int{len(s.running), len(s.accepting), len(s.deciding)} {
		if n > 0 {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	switch kinds[s.rng.IntN(len(kinds))] {
	case 0:
		id := s.take(&s.running)
		switch s.rng.IntN(6) {
		case 0:
			return evTimedOut{ID: id}
		case 1:
			return evAgentDied{IDs: []string{id}, Cause: errors.New("killed")}
		case 2:
			return evBadReport{ID: id, Err: errors.New("torn")}
		}
		st := []protocol.Status{protocol.StatusCompleted, protocol.StatusCompleted, protocol.StatusFailed, protocol.StatusInterrupted}[s.rng.IntN(4)]
		return evReport{ID: id, Report: &protocol.Report{ID: id, Status: st, Summary: "did " + id, Error: "broke"}}
	case 1:
		id := s.take(&s.accepting)
		if !s.isolated {
			return evAccepted{ID: id, Failure: []string{"", "", "tests failed"}[s.rng.IntN(3)]}
		}
		ev := evMerged{ID: id, Candidate: "c-" + id, Changed: s.rng.IntN(2) == 0}
		switch s.rng.IntN(4) {
		case 0:
			ev.Conflict = []string{"a.go"}
		case 1:
			ev.Failure = "acceptance failed"
		}
		return ev
	default:
		id := s.take(&s.deciding)
		return evDecided{ID: id, Verdict: Verdict{Action: []Choice{Retry, Continue, Abort}[s.rng.IntN(3)], Reason: "r"}}
	}
}

// do carries one action out and checks the invariants it touches.
func (s *simRun) do(a action) error {
	switch a := a.(type) {
	case actDispatch:
		t, _ := s.g.Get(a.ID)
		for _, d := range t.Dependencies {
			if dt, _ := s.g.Get(d); dt.Status != taskgraph.Completed {
				return fmt.Errorf("%s started before its dependency %s completed (%s)", a.ID, d, dt.Status)
			}
		}
		if err := s.g.Start(a.ID); err != nil {
			return err
		}
		if t, _ := s.g.Get(a.ID); t.Attempts > s.maxRetries+1+spareAttempts {
			return fmt.Errorf("%s started attempt %d with --max-retries %d", a.ID, t.Attempts, s.maxRetries)
		}
		s.running = append(s.running, a.ID)
		if n := len(s.running) + len(s.accepting); n > s.parallel {
			return fmt.Errorf("%d tasks in flight (running or waiting for their merge) at --parallel %d", n, s.parallel)
		}
	case actAccept:
		s.accepting = append(s.accepting, a.ID)
	case actMerge:
		s.accepting = append(s.accepting, a.ID)
	case actComplete:
		s.completed[a.ID]++
		if s.completed[a.ID] > 1 {
			return fmt.Errorf("%s completed twice", a.ID)
		}
		return s.g.Complete(a.ID, a.Summary)
	case actFail:
		return s.g.Fail(a.ID, a.Reason)
	case actAsk:
		s.deciding = append(s.deciding, a.Failure.Task.ID)
	case actRetry:
		return s.g.Retry(a.ID)
	case actRequeue:
		if err := s.g.Fail(a.ID, a.Note); err != nil {
			return err
		}
		return s.g.Retry(a.ID)
	case actAbort:
		s.aborted = true
	case actStopConfig:
		s.budget = "configuration error: " + a.Reason
	case actFinish:
		if len(s.running)+len(s.accepting)+len(s.deciding) > 0 {
			return fmt.Errorf("the run finished with work in flight")
		}
		s.finished = true
	case actRecord, actDecide, actRestart, actNoteBudget:
	default:
		return fmt.Errorf("unexpected action %T", a)
	}
	return nil
}

func (s *simRun) handle(ev event) error {
	for _, e := range []event{ev, evSettle{}} {
		for _, a := range next(s.view(), e) {
			if err := s.do(a); err != nil {
				return fmt.Errorf("after %#v: %w", e, err)
			}
		}
	}
	return nil
}

// randomGraph is up to 12 tasks, each depending on a random few of the
// tasks before it.
func randomGraph(rng *rand.Rand) (*taskgraph.Graph, error) {
	n := 1 + rng.IntN(12)
	tasks := make([]taskgraph.Task, n)
	for i := range tasks {
		tasks[i] = taskgraph.Task{ID: fmt.Sprintf("t%02d", i), Description: "task"}
		if rng.IntN(2) == 0 {
			tasks[i].Acceptance = []string{"go test ./..."}
		}
		for j := range i {
			if rng.IntN(4) == 0 {
				tasks[i].Dependencies = append(tasks[i].Dependencies, tasks[j].ID)
			}
		}
	}
	return taskgraph.New(tasks)
}

// TestNextProperties drives next with random graphs and random sequences of
// reports, deaths, timeouts, merges and decisions: whatever happens, no
// task completes twice, no task starts before its dependencies completed,
// no task gets more attempts than its budget, the work in flight (running
// or waiting for its merge) never exceeds --parallel, and the run ends.
func TestNextProperties(t *testing.T) {
	check := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		g, err := randomGraph(rng)
		if err != nil {
			t.Error(err)
			return false
		}
		s := &simRun{rng: rng, g: g, parallel: 1 + rng.IntN(4), maxRetries: rng.IntN(3),
			isolated: rng.IntN(2) == 0, decider: rng.IntN(2) == 0, completed: map[string]int{}}
		if err := s.handle(evSettle{}); err != nil {
			t.Errorf("seed %d: %v", seed, err)
			return false
		}
		for steps := 0; !s.finished; steps++ {
			ev := s.event()
			if ev == nil || steps > 10000 {
				t.Errorf("seed %d: the run neither finished nor has anything to wait for (%d steps, %d tasks)", seed, steps, g.Len())
				return false
			}
			if err := s.handle(ev); err != nil {
				t.Errorf("seed %d: %v", seed, err)
				return false
			}
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 500}); err != nil {
		t.Error(err)
	}
}
