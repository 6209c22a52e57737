package next

import (
	"math/rand/v2"
	"testing"
)

// seriesSim plays one task of several attempts against Decide with random
// outcomes: checks pass or fail, the gate accepts or rejects, the budget
// may be reached. It carries the actions out as the orchestrator does and
// checks, every step, that no more attempts start than the series has,
// nor more run than --parallel, that a candidate is chosen only when one
// is held and none is chosen, and that the series ends.
type seriesSim struct {
	t                *testing.T
	rng              *rand.Rand
	policy           string
	size, parallel   int
	firstPassWins    bool
	budget           string
	started          int
	live             map[int]bool // started, not ended
	held             map[int]bool
	firstFailed      bool
	chosen           int
	lastErr          string
	ended, completed bool
	requeued         bool
}

func (s *seriesSim) view() View {
	running := 0
	flights := map[string]Flight{}
	for n := range s.live {
		running++
		flights["a@"+itoa(n)] = Flight{ID: "a", Attempt: n}
	}
	t := Task{Several: true, BestOf: s.size, Series: s.size, Started: s.started, Live: len(s.live), Held: len(s.held),
		FirstFailed: s.firstFailed, Chosen: s.chosen != 0, LastError: s.lastErr, Attempts: s.started}
	accepting := 0
	if s.chosen != 0 {
		accepting = 1
	}
	v := View{Graph: seriesGraph{tasks: map[string]Task{"a": t}}, Parallel: s.parallel, Running: running, Accepting: accepting,
		Policy: s.policy, FirstPassWins: s.firstPassWins, Budget: s.budget, Flights: flights, RunID: "r", MaxRetries: 0}
	if !s.ended {
		v.Series = []string{"a"}
	}
	return v
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func (s *seriesSim) apply(acts []Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case ActDispatch:
			s.started++
			s.live[s.started] = true
			if s.started > s.size {
				s.t.Fatalf("attempt %d started of a series of %d", s.started, s.size)
			}
		case ActChoose:
			if len(s.held) == 0 || s.chosen != 0 {
				s.t.Fatalf("chose with %d held, %d chosen", len(s.held), s.chosen)
			}
			best := 0
			for n := range s.held {
				if best == 0 || n < best {
					best = n
				}
			}
			delete(s.held, best)
			s.chosen = best
		case ActStopAttempts:
			s.live = map[int]bool{}
			s.lastErr = a.Reason
		case ActEndAttempt:
			delete(s.live, a.Attempt)
			if a.Attempt == 1 {
				s.firstFailed = true
			}
			if s.chosen == a.Attempt {
				s.chosen = 0
			}
			s.lastErr = a.Reason
		case ActFail:
			s.ended = true
		case ActRequeue:
			s.ended, s.requeued = true, true
		case ActComplete:
			s.ended, s.completed = true, true
		}
	}
	if len(s.live) > s.parallel {
		s.t.Fatalf("%d attempts under way at --parallel %d", len(s.live), s.parallel)
	}
}

func TestSeriesProperties(t *testing.T) {
	outcomes := map[string]int{}
	defer func() {
		// The random runs reach every ending, or they test little.
		if outcomes["completed"] == 0 || outcomes["failed"] == 0 || outcomes["requeued"] == 0 {
			t.Errorf("outcomes %v: an ending never reached", outcomes)
		}
	}()
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := &seriesSim{t: t, rng: rng, policy: []string{PolicyParallel, PolicyEscalate}[rng.IntN(2)],
			size: 2 + rng.IntN(3), parallel: 1 + rng.IntN(4), firstPassWins: rng.IntN(3) == 0,
			live: map[int]bool{}, held: map[int]bool{}}
		passedAny := false
		for step := 0; !s.ended; step++ {
			if step > 200 {
				t.Fatalf("seed %d: the series did not end: %+v", seed, s)
			}
			s.apply(Decide(s.view(), EvSettle{}))
			if s.ended {
				break
			}
			if rng.IntN(10) == 0 && s.budget == "" {
				s.budget = "token budget reached"
				continue
			}
			switch {
			case s.chosen > 0:
				ev := EvMerged{ID: "a", Attempt: s.chosen}
				if rng.IntN(3) == 0 {
					ev.Failure = "FAIL on the merged tree"
				}
				acts := Decide(s.view(), ev)
				if ev.Failure == "" {
					acts = append(acts, ActComplete{ID: "a"}) // the orchestrator's complete
				}
				s.apply(acts)
			case len(s.live) > 0:
				var ns []int
				for n := range s.live {
					ns = append(ns, n)
				}
				n := ns[rng.IntN(len(ns))]
				ev := EvChecked{ID: "a", Attempt: n}
				if rng.IntN(2) == 0 {
					ev.Failure = "FAIL"
				} else {
					passedAny = true
					delete(s.live, n) // held, as the orchestrator records it
					s.held[n] = true
				}
				s.apply(Decide(s.view(), ev))
			default:
				if s.chosen < 0 {
					t.Fatalf("seed %d: stuck", seed)
				}
			}
		}
		switch {
		case s.completed:
			outcomes["completed"]++
		case s.requeued:
			outcomes["requeued"]++
		default:
			outcomes["failed"]++
		}
		if s.completed && !passedAny {
			t.Fatalf("seed %d: completed with no attempt passing", seed)
		}
		if !s.completed && !s.requeued && len(s.held) > 0 && s.budget == "" {
			t.Fatalf("seed %d: failed with %d candidates held", seed, len(s.held))
		}
	}
}
