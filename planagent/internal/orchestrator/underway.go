package orchestrator

import (
	"fmt"
	"maps"
	"slices"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
)

// underway owns what next reads of the work under way: the attempts in
// flight and the off-loop work counted until its result comes back. Every
// change goes through a method named for what happened, so a start and its
// end are paired in one place, and an end with nothing started is a bug
// that panics rather than a count gone negative that next would misread.
// Only the loop's goroutine touches it.
type underway struct {
	flights map[string]*flight // by key: the task's id, or an attempt's stem (run.key)
	// abandoned: attempts given up on (by key) whose copy must not be
	// recycled, for something may still write there.
	abandoned map[string]bool
	copying   int // attempts whose copies are being made
	// What next counts as Accepting, kept apart so that each end is
	// matched with its own kind of start.
	accepting int // acceptance runs in the shared workspace
	merges    int // merges queued or under way
	checks    int // attempts of several squashed and checked on their own
	reviews   int // LLM judges asked to pick among tied attempts
	deciding  int // decider calls
	aborted   bool
}

func newUnderway() *underway {
	return &underway{flights: map[string]*flight{}, abandoned: map[string]bool{}}
}

// launched: the command of the flight under key went out (or a resumed
// run waits for it again).
func (u *underway) launched(key string, f *flight) { u.flights[key] = f }

// flight is the flight under key, nil when none is waited for.
func (u *underway) flight(key string) *flight { return u.flights[key] }

// keys are the flights' keys, sorted so that what is made of them is in
// the same order every time.
func (u *underway) keys() []string { return slices.Sorted(maps.Keys(u.flights)) }

// ended: the flight under key is no longer waited for (its report came,
// or it ended otherwise); it is returned, nil when there was none.
func (u *underway) ended(key string) *flight {
	f := u.flights[key]
	delete(u.flights, key)
	return f
}

// gaveUp: the flight under key was given up on (timed out, or stopped
// because another attempt won) and its copy must not be recycled.
func (u *underway) gaveUp(key string) *flight {
	u.abandoned[key] = true
	return u.ended(key)
}

// lostTrack: the runtime cannot fence what ran the attempt under key, so
// its copy must not be recycled either.
func (u *underway) lostTrack(key string) { u.abandoned[key] = true }

// isAbandoned tells whether the copy under key may still be written to.
func (u *underway) isAbandoned(key string) bool { return u.abandoned[key] }

// copyDropped: the copy under key is being thrown away; it returns whether
// it was abandoned (then deleted, not recycled), and forgets it.
func (u *underway) copyDropped(key string) bool {
	a := u.abandoned[key]
	delete(u.abandoned, key)
	return a
}

func (u *underway) copyStarted(n int) { u.copying += n }
func (u *underway) copied(n int)      { down(&u.copying, n, "copies made") }

func (u *underway) acceptStarted() { u.accepting++ }
func (u *underway) acceptEnded()   { down(&u.accepting, 1, "acceptance run ended") }

func (u *underway) mergeQueued() { u.merges++ }
func (u *underway) mergeEnded()  { down(&u.merges, 1, "merge ended") }

func (u *underway) checkStarted() { u.checks++ }
func (u *underway) checkEnded()   { down(&u.checks, 1, "check of an attempt ended") }

func (u *underway) reviewStarted() { u.reviews++ }
func (u *underway) reviewEnded()   { down(&u.reviews, 1, "review ended") }

func (u *underway) decideStarted() { u.deciding++ }
func (u *underway) decideEnded()   { down(&u.deciding, 1, "decider call ended") }

// abort: the run stops starting anything; what is under way ends first.
func (u *underway) abort() { u.aborted = true }

// down takes n off a count; more than it holds is an end without its start.
func down(c *int, n int, what string) {
	if n > *c {
		panic(fmt.Sprintf("orchestrator: %d %s with %d under way", n, what, *c))
	}
	*c -= n
}

// fill sets what next.View reads of the work under way.
func (u *underway) fill(v *next.View) {
	v.Flights = make(map[string]next.Flight, len(u.flights))
	for key, f := range u.flights {
		v.Flights[key] = f.Flight
	}
	v.Running = len(u.flights)
	v.Copying = u.copying
	v.Accepting = u.accepting + u.merges + u.checks + u.reviews
	v.Deciding = u.deciding
	v.Aborted = u.aborted
}
