package orchestrator

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// simRun carries next's actions out on a graph the way the executor does,
// with random answers from the agents, the merge queue and the decider, a
// clock and a watcher that may fall silent, and checks the run's
// invariants on every step.
type simRun struct {
	rng        *rand.Rand
	g          *taskgraph.Graph
	parallel   int
	maxRetries int
	isolated   bool
	decider    bool
	copying    []string // attempts dispatched whose copies are being made
	running    []string // attempts waiting for their report
	flights    map[string]next.Flight
	accepting  []string // finished, waiting for acceptance (without checkpoints)
	queue      []string // completed attempts waiting for their merge, in completion order
	merging    string   // the attempt being merged
	mergeOnto  string   // the state it is merged onto
	head       string   // the integration state
	merges     int      // the merges made, for their candidates' names
	deciding   []string // failures the decider is asked about
	aborted    bool
	budget     string
	finished   bool
	completed  map[string]int
	abandoned  map[string]int // by task and attempt
	now        time.Time
	heartbeat  time.Time // the watcher's last beat
	frozen     bool      // the watcher stopped beating
	outcomes   []event   // what the executor hands back to the loop
	lateDeath  string    // the task whose earlier attempt's agent the event says died
}

const (
	simTaskTimeout      = 10 * time.Minute
	simHeartbeatTimeout = 30 * time.Second
)

func (s *simRun) view() next.View {
	merging := s.merging != ""
	accepting := len(s.accepting) + len(s.queue)
	if merging {
		accepting++
	}
	v := next.View{Graph: graphView{s.g, 1, nil}, Copying: len(s.copying), Running: len(s.running), Accepting: accepting, Deciding: len(s.deciding),
		Isolated: s.isolated, Aborted: s.aborted, Parallel: s.parallel, MaxRetries: s.maxRetries,
		Decider: s.decider, Budget: s.budget, RunID: "r", Flights: maps.Clone(s.flights),
		HeartbeatTimeout: simHeartbeatTimeout, Merging: merging, Head: s.head}
	if len(s.queue) > 0 {
		v.MergeNext = s.queue[0]
	}
	return v
}

// take removes and returns a random element of *ids.
func (s *simRun) take(ids *[]string) string {
	i := s.rng.IntN(len(*ids))
	id := (*ids)[i]
	*ids = slices.Delete(*ids, i, i+1)
	return id
}

// launch sends a dispatched attempt: it is waited for from now on.
func (s *simRun) launch(id string) {
	t, _ := s.g.Get(id)
	s.running = append(s.running, id)
	s.flights[id] = next.Flight{Attempt: t.Attempts, Launched: s.now, Deadline: s.now.Add(simTaskTimeout)}
}

// land stops waiting for a running attempt.
func (s *simRun) land(id string) {
	s.running = slices.DeleteFunc(s.running, func(r string) bool { return r == id })
	delete(s.flights, id)
}

// event is a random thing that can happen next, with the bookkeeping the
// observer and the loop do before next sees it; nil when nothing can.
func (s *simRun) event() event {
	var kinds []int
	for k, n := range []int{len(s.running), len(s.accepting), len(s.deciding), len(s.running)} {
		if n > 0 {
			kinds = append(kinds, k)
		}
	}
	if s.merging != "" {
		kinds = append(kinds, 4)
	}
	if len(s.copying) > 0 {
		kinds = append(kinds, 5)
	}
	if len(kinds) == 0 {
		return nil
	}
	kind := kinds[s.rng.IntN(len(kinds))]
	if s.merging != "" && len(s.queue) == 0 && len(s.running) > 0 && s.rng.IntN(3) > 0 {
		// Mostly a report before the merge under way ends: the queue then
		// holds the next merge, which starts onto this one's result.
		kind = 0
	}
	switch kind {
	case 0:
		id := s.running[s.rng.IntN(len(s.running))]
		f := s.flights[id]
		switch s.rng.IntN(9) {
		case 0:
			return next.EvAgentDied{TaskID: id, Attempt: f.Attempt, Cause: errors.New("killed")}
		case 3:
			if f.Attempt > 1 {
				// An earlier attempt's agent, found dead late.
				s.lateDeath = id
				return next.EvAgentDied{TaskID: id, Attempt: f.Attempt - 1, Cause: errors.New("late")}
			}
		case 1:
			return next.EvBadReport{ID: id, Err: errors.New("torn")}
		case 2:
			// An earlier attempt's report, or an earlier run's.
			if f.Attempt > 1 {
				return reported{ID: id, Report: &protocol.Report{ID: id, RunID: "r", Attempt: f.Attempt - 1, Status: protocol.StatusCompleted}}
			}
			return reported{ID: id, Report: &protocol.Report{ID: id, RunID: "old", Attempt: f.Attempt, Status: protocol.StatusCompleted}}
		}
		st := []protocol.Status{protocol.StatusCompleted, protocol.StatusCompleted, protocol.StatusFailed, protocol.StatusInterrupted}[s.rng.IntN(4)]
		return reported{ID: id, Report: &protocol.Report{ID: id, RunID: "r", Attempt: f.Attempt, Status: st, Summary: "did " + id, Error: "broke"}}
	case 1:
		id := s.take(&s.accepting)
		return next.EvAccepted{ID: id, Failure: []string{"", "", "tests failed"}[s.rng.IntN(3)]}
	case 2:
		id := s.take(&s.deciding)
		return decided{ID: id, Verdict: Verdict{Action: []Choice{Retry, Continue, Abort}[s.rng.IntN(3)], Reason: "r"}}
	case 3:
		// The clock moves on; the watcher beats unless it froze.
		s.now = s.now.Add([]time.Duration{time.Second, 20 * time.Second, time.Minute, 6 * time.Minute}[s.rng.IntN(4)])
		if s.rng.IntN(20) == 0 {
			s.frozen = true
		}
		if !s.frozen {
			s.heartbeat = s.now
		}
		return next.EvTick{Now: s.now, Heartbeat: s.heartbeat}
	case 5:
		// The copies of one dispatch are made, rarely not.
		ids := s.copying
		s.copying = nil
		if s.rng.IntN(40) == 0 {
			return next.EvCopied{IDs: ids, Err: errors.New("disk full")}
		}
		return next.EvCopied{IDs: ids}
	default:
		id := s.merging
		s.merging = ""
		s.merges++
		ev := next.EvMerged{ID: id, Onto: s.mergeOnto, Candidate: fmt.Sprintf("c%d-%s", s.merges, id), Changed: s.rng.IntN(2) == 0}
		switch s.rng.IntN(4) {
		case 0:
			ev.Conflict = []string{"a.go"}
		case 1:
			ev.Failure = "acceptance failed"
		}
		return ev
	}
}

// do carries one next.Action out and checks the invariants it touches.
func (s *simRun) do(src event, a next.Action) error {
	switch a := a.(type) {
	case next.ActDispatch:
		if _, ok := s.flights[a.ID]; ok {
			return fmt.Errorf("%s dispatched while its attempt is still waited for", a.ID)
		}
		t, _ := s.g.Get(a.ID)
		for _, d := range t.Dependencies {
			if dt, _ := s.g.Get(d); dt.Status != taskgraph.Completed {
				return fmt.Errorf("%s started before its dependency %s completed (%s)", a.ID, d, dt.Status)
			}
		}
		if err := s.g.Start(a.ID); err != nil {
			return err
		}
		t, _ = s.g.Get(a.ID)
		if t.Attempts > s.maxRetries+1+next.SpareAttempts {
			return fmt.Errorf("%s started attempt %d with --max-retries %d", a.ID, t.Attempts, s.maxRetries)
		}
		if s.isolated {
			s.copying = append(s.copying, a.ID)
		} else {
			s.launch(a.ID)
		}
		if n := len(s.copying) + len(s.running) + s.view().Accepting; n > s.parallel {
			return fmt.Errorf("%d tasks in flight (being copied, running or waiting for their merge) at --parallel %d", n, s.parallel)
		}
	case next.ActLaunch:
		copied, ok := src.(next.EvCopied)
		if !ok || !slices.Contains(copied.IDs, a.ID) || copied.Err != nil {
			return fmt.Errorf("%s launched after %#v, not after its copy was made", a.ID, src)
		}
		if s.aborted {
			return fmt.Errorf("%s launched after the run was aborted", a.ID)
		}
		if t, _ := s.g.Get(a.ID); t.Status != taskgraph.InProgress {
			return fmt.Errorf("%s launched while %s", a.ID, t.Status)
		}
		s.launch(a.ID)
	case next.ActHalt:
		if copied, ok := src.(next.EvCopied); !ok || copied.Err == nil {
			return fmt.Errorf("the run halted after %#v", src)
		}
		s.finished = true
	case next.ActRecord:
		rep := src.(reported).Report
		if f := s.flights[a.ID]; rep.RunID != "r" || rep.Attempt != f.Attempt {
			return fmt.Errorf("%s: the report of run %s attempt %d recorded while attempt %d runs", a.ID, rep.RunID, rep.Attempt, f.Attempt)
		}
		s.land(a.ID)
	case next.ActDropStaleReport:
		if a.RunID == "r" && a.Attempt == s.flights[a.ID].Attempt {
			return fmt.Errorf("%s: the current attempt's report dropped as stale", a.ID)
		}
	case next.ActStopWaiting:
		if a.ID == s.lateDeath {
			return fmt.Errorf("%s: an earlier attempt's late death took the attempt in flight", a.ID)
		}
		if _, ok := s.flights[a.ID]; !ok {
			return fmt.Errorf("%s: stopped waiting for an attempt not in flight", a.ID)
		}
		s.land(a.ID)
	case next.ActAbandon:
		f, ok := s.flights[a.ID]
		if !ok || !s.now.After(f.Deadline) {
			return fmt.Errorf("%s abandoned while not past its deadline (in flight %v)", a.ID, ok)
		}
		key := fmt.Sprintf("%s.%d", a.ID, f.Attempt)
		if s.abandoned[key]++; s.abandoned[key] > 1 {
			return fmt.Errorf("attempt %s abandoned twice", key)
		}
		s.land(a.ID)
		s.outcomes = append(s.outcomes, next.EvTimedOut(a))
	case next.ActStopSilentWatcher:
		if !s.heartbeat.Before(s.now.Add(-simHeartbeatTimeout)) {
			return fmt.Errorf("a watcher that beat at %s taken for dead at %s", s.heartbeat, s.now)
		}
		waited := false
		for _, f := range s.flights {
			waited = waited || !f.Launched.After(s.now.Add(-simHeartbeatTimeout))
		}
		if !waited {
			return fmt.Errorf("the watcher taken for dead before a task waited %s for it", simHeartbeatTimeout)
		}
		s.outcomes = append(s.outcomes, next.EvAgentDied{Cause: errors.New("silent")})
	case next.ActFreeClaim:
	case next.ActNoteLateDeath:
		if f, ok := s.flights[a.ID]; !ok || f.Attempt == a.Attempt {
			return fmt.Errorf("%s: the death of its attempt %d taken for a late one (in flight %v, attempt %d)", a.ID, a.Attempt, ok, f.Attempt)
		}
	case next.ActRestart:
		s.frozen, s.heartbeat = false, s.now
	case next.ActAccept:
		s.accepting = append(s.accepting, a.ID)
	case next.ActMerge:
		if !s.isolated {
			return fmt.Errorf("%s merged without checkpoints", a.ID)
		}
		s.queue = append(s.queue, a.ID)
	case next.ActStartMerge:
		if s.merging != "" {
			return fmt.Errorf("%s merged while %s is merging", a.ID, s.merging)
		}
		if len(s.queue) == 0 || s.queue[0] != a.ID {
			return fmt.Errorf("%s merged out of completion order %v", a.ID, s.queue)
		}
		s.merging, s.queue = a.ID, s.queue[1:]
		s.mergeOnto = a.Onto
		if a.Onto == "" {
			s.mergeOnto = s.head
		}
	case next.ActRemerge:
		merged, ok := src.(next.EvMerged)
		if !ok || merged.ID != a.ID || merged.Onto == s.head {
			return fmt.Errorf("%s merged again after %#v (the integration state is %q)", a.ID, src, s.head)
		}
		s.queue = append([]string{a.ID}, s.queue...)
	case next.ActComplete:
		if a.Commit != "" {
			// The merged result reaches the workspace only from the
			// state it was merged onto; the move may fail (a file the
			// user changed meanwhile), which comes back as a failed merge.
			merged, ok := src.(next.EvMerged)
			if !ok || merged.Onto != s.head {
				return fmt.Errorf("%s: the workspace moved to %s, merged onto %q, from %q", a.ID, a.Commit, merged.Onto, s.head)
			}
			if s.rng.IntN(3) == 0 {
				s.outcomes = append(s.outcomes, next.EvMerged{ID: a.ID, Failure: "update the workspace with the merged result: changed meanwhile"})
				return nil
			}
			s.head = a.Commit
		}
		s.completed[a.ID]++
		if s.completed[a.ID] > 1 {
			return fmt.Errorf("%s completed twice", a.ID)
		}
		return s.g.Complete(a.ID, a.Summary)
	case next.ActFail:
		if _, ok := s.flights[a.ID]; ok {
			return fmt.Errorf("%s failed while its attempt is still waited for", a.ID)
		}
		return s.g.Fail(a.ID, a.Reason)
	case next.ActAsk:
		s.deciding = append(s.deciding, a.ID)
	case next.ActRetry:
		return s.g.Retry(a.ID)
	case next.ActRequeue:
		if _, ok := s.flights[a.ID]; ok {
			return fmt.Errorf("%s sent again while its attempt is still waited for", a.ID)
		}
		if err := s.g.Fail(a.ID, a.Note); err != nil {
			return err
		}
		return s.g.Retry(a.ID)
	case next.ActAbort:
		s.aborted = true
	case next.ActStopConfig:
		s.budget = "configuration error: " + a.Reason
	case next.ActFinish:
		if len(s.copying)+len(s.running)+s.view().Accepting+len(s.deciding) > 0 {
			return fmt.Errorf("the run finished with work in flight")
		}
		s.finished = true
	case next.ActDecide, next.ActNoteBudget:
	default:
		return fmt.Errorf("unexpected next.Action %T", a)
	}
	return nil
}

// handle decides on ev, then on what carrying that out handed back, then
// settles, as the loop does.
func (s *simRun) handle(ev event) error {
	evs := []event{ev, next.EvSettle{}}
	for len(evs) > 0 {
		src, e := nextEvent(s.g, evs[0])
		evs = evs[1:]
		for _, a := range next.Decide(s.view(), e) {
			if err := s.do(src, a); err != nil {
				return fmt.Errorf("after %#v: %w", e, err)
			}
		}
		evs, s.outcomes = append(s.outcomes, evs...), nil
		s.lateDeath = ""
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
// reports (stale ones among them), deaths (late ones of an earlier attempt
// among them), clock ticks, a watcher falling silent, merges and
// decisions: whatever happens, no task completes twice, no task starts
// before its dependencies completed, no task gets more attempts than its
// budget, the work in flight (its copy being made, running or waiting for
// its merge) never exceeds --parallel, an attempt is launched only once
// its copy is made and never after an abort, a stale report is never taken for the answer, a task
// is dispatched, failed or sent again only once its attempt is no longer
// waited for, a late death takes nothing, an attempt is abandoned only past
// its deadline and only once, the watcher is taken for dead only when a
// task waited the heartbeat timeout and its heartbeat is older, the merge
// queue takes one at a time in completion order, a merged result reaches
// the workspace only from the state it was merged onto (one merged onto a
// state a failed move never reached is merged again), and the run ends.
func TestNextProperties(t *testing.T) {
	t.Parallel()
	check := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		g, err := randomGraph(rng)
		if err != nil {
			t.Error(err)
			return false
		}
		s := &simRun{rng: rng, g: g, parallel: 1 + rng.IntN(4), maxRetries: rng.IntN(3), head: "start",
			isolated: rng.IntN(2) == 0, decider: rng.IntN(2) == 0, completed: map[string]int{},
			flights: map[string]next.Flight{}, abandoned: map[string]int{}, now: time.Unix(1e9, 0)}
		s.heartbeat = s.now
		if err := s.handle(next.EvSettle{}); err != nil {
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
