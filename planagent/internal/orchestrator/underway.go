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
	// What next counts as Accepting, with the merge queue below, kept
	// apart so that each end is matched with its own kind of start.
	accepting int // acceptance runs in the shared workspace
	checks    int // attempts of several squashed and checked on their own
	reviews   int // LLM judges asked to pick among tied attempts
	deciding  int // decider calls
	aborted   bool
	// The merge queue, merged one at a time in completion order: queue
	// waits, merging tells whether lastMerge is under way (else it is the
	// last one merged, which a failed move may queue again).
	queue     []mergeJob
	merging   bool
	lastMerge mergeJob
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

// mergeQueued: job waits for its merge, behind those queued before.
func (u *underway) mergeQueued(job mergeJob) { u.queue = append(u.queue, job) }

// mergeStarted takes the queue's head, which must be id's, for its merge,
// when none is under way.
func (u *underway) mergeStarted(id string) (mergeJob, error) {
	if u.merging || len(u.queue) == 0 || u.queue[0].id != id {
		return mergeJob{}, fmt.Errorf("orchestrator: merge of %s is not the queue's next", id)
	}
	u.merging, u.lastMerge = true, u.queue[0]
	u.queue = u.queue[1:]
	return u.lastMerge, nil
}

// remerge puts the last merged, which must be id's, back at the queue's
// head: it went onto a state the workspace never reached.
func (u *underway) remerge(id string) error {
	if u.merging || u.lastMerge.id != id {
		return fmt.Errorf("orchestrator: merge of %s again, not the last merged", id)
	}
	u.queue = append([]mergeJob{u.lastMerge}, u.queue...)
	return nil
}

// mergeEnded: the merge under way came back; it is returned.
func (u *underway) mergeEnded() mergeJob {
	if !u.merging {
		panic("orchestrator: merge ended with none under way")
	}
	u.merging = false
	return u.lastMerge
}

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
	v.Accepting = u.accepting + len(u.queue) + u.checks + u.reviews
	if u.merging {
		v.Accepting++
	}
	v.Deciding = u.deciding
	v.Aborted = u.aborted
	v.Merging = u.merging
	v.MergeNext = ""
	if len(u.queue) > 0 {
		v.MergeNext = u.queue[0].id
	}
}
