package orchestrator

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
)

func viewOf(u *underway) next.View {
	var v next.View
	u.fill(&v)
	return v
}

// An end with no start of its kind is a bug in the executor: it panics,
// naming what ended, instead of leaving a count next would misread.
func TestUnderwayEndWithoutStartPanics(t *testing.T) {
	t.Parallel()
	ends := map[string]func(u *underway){
		"copies made":               func(u *underway) { u.copied(1) },
		"acceptance run ended":      func(u *underway) { u.acceptEnded() },
		"merge ended":               func(u *underway) { u.mergeEnded() },
		"check of an attempt ended": func(u *underway) { u.checkEnded() },
		"review ended":              func(u *underway) { u.reviewEnded() },
		"decider call ended":        func(u *underway) { u.decideEnded() },
	}
	for what, end := range ends {
		t.Run(what, func(t *testing.T) {
			u := newUnderway()
			// Other kinds under way do not pay for this one's end.
			u.copyStarted(1)
			u.acceptStarted()
			u.mergeQueued(mergeJob{id: "t009"})
			if _, err := u.mergeStarted("t009"); err != nil {
				t.Fatal(err)
			}
			u.mergeQueued(mergeJob{id: "t010"}) // queued is not under way
			u.checkStarted()
			u.reviewStarted()
			u.decideStarted()
			end(u)
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, what) {
					t.Errorf("second end panicked with %q, want a panic naming %q", msg, what)
				}
			}()
			end(u)
		})
	}
}

func TestUnderwayMoreCopiesMadeThanStartedPanics(t *testing.T) {
	t.Parallel()
	u := newUnderway()
	u.copyStarted(2)
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "3 copies made with 2 under way") {
			t.Errorf("panicked with %q, want the 3 copies against 2 named", msg)
		}
	}()
	u.copied(3)
}

// next counts acceptance runs, merges, checks and reviews as one: each
// holds a slot of --parallel until it ends.
func TestUnderwayViewCountsEachKindUntilItEnds(t *testing.T) {
	t.Parallel()
	u := newUnderway()
	u.copyStarted(3)
	u.acceptStarted()
	u.mergeQueued(mergeJob{id: "t001"})
	u.mergeQueued(mergeJob{id: "t002"})
	u.checkStarted()
	u.reviewStarted()
	u.decideStarted()
	v := viewOf(u)
	if v.Copying != 3 || v.Accepting != 5 || v.Deciding != 1 || v.Running != 0 || v.Aborted {
		t.Fatalf("view copying %d accepting %d deciding %d running %d aborted %v, want 3 5 1 0 false", v.Copying, v.Accepting, v.Deciding, v.Running, v.Aborted)
	}
	u.copied(2)
	if _, err := u.mergeStarted("t001"); err != nil {
		t.Fatal(err)
	}
	if v := viewOf(u); v.Accepting != 5 || !v.Merging || v.MergeNext != "t002" {
		t.Errorf("view accepting %d merging %v next %q, want a started merge still counted, t002 next", v.Accepting, v.Merging, v.MergeNext)
	}
	u.mergeEnded()
	u.reviewEnded()
	u.decideEnded()
	u.abort()
	v = viewOf(u)
	if v.Copying != 1 || v.Accepting != 3 || v.Deciding != 0 || !v.Aborted {
		t.Errorf("view copying %d accepting %d deciding %d aborted %v, want 1 3 0 true", v.Copying, v.Accepting, v.Deciding, v.Aborted)
	}
}

func TestUnderwayFlightsAreTheViewsAndGivingUpKeepsTheCopy(t *testing.T) {
	t.Parallel()
	u := newUnderway()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, key := range []string{"t001", "t000.2", "t000.1"} {
		u.launched(key, &flight{Flight: next.Flight{ID: strings.Split(key, ".")[0], Attempt: i + 1, Launched: now}})
	}
	if got := u.keys(); !slices.Equal(got, []string{"t000.1", "t000.2", "t001"}) {
		t.Errorf("keys %v, want them sorted", got)
	}
	v := viewOf(u)
	if v.Running != 3 || len(v.Flights) != 3 || v.Flights["t000.2"] != (next.Flight{ID: "t000", Attempt: 2, Launched: now}) {
		t.Errorf("view running %d flights %v, want the three flights as launched", v.Running, v.Flights)
	}
	if f := u.ended("t001"); f == nil || f.ID != "t001" {
		t.Errorf("ended returned %v, want t001's flight", f)
	}
	if f := u.ended("t001"); f != nil {
		t.Errorf("a second end returned %v, want none", f)
	}
	if f := u.gaveUp("t000.2"); f == nil || f.Attempt != 2 {
		t.Errorf("gaveUp returned %v, want attempt 2's flight", f)
	}
	u.lostTrack("t000.1")
	v = viewOf(u)
	if v.Running != 1 || len(v.Flights) != 1 || u.flight("t000.2") != nil {
		t.Errorf("view running %d flights %v, want only t000.1", v.Running, v.Flights)
	}
	if u.isAbandoned("t001") || !u.isAbandoned("t000.2") || !u.isAbandoned("t000.1") {
		t.Errorf("abandoned %v, want t000.1 and t000.2 only", u.abandoned)
	}
	// The copy is thrown away once; a later copy under the key is another's.
	if !u.copyDropped("t000.2") || u.copyDropped("t000.2") || u.isAbandoned("t000.2") {
		t.Error("a dropped abandoned copy is still remembered")
	}
}

// Any order of starts and ends that pairs each end with a start leaves
// the view equal to a plain count of what is under way.
func TestUnderwayViewMatchesACountAlongRandomRuns(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 1))
	for range 200 {
		u := newUnderway()
		want := map[string]int{}
		starts := map[string]func(){
			"copy": func() { u.copyStarted(1) }, "accept": u.acceptStarted, "merge": func() { u.mergeQueued(mergeJob{id: "t000"}) },
			"check": u.checkStarted, "review": u.reviewStarted, "decide": u.decideStarted,
		}
		ends := map[string]func(){
			"copy": func() { u.copied(1) }, "accept": u.acceptEnded, "merge": func() {
				if _, err := u.mergeStarted("t000"); err != nil {
					t.Fatal(err)
				}
				u.mergeEnded()
			},
			"check": u.checkEnded, "review": u.reviewEnded, "decide": u.decideEnded,
		}
		kinds := slices.Sorted(maps.Keys(starts))
		for range 50 {
			k := kinds[rng.IntN(len(kinds))]
			if want[k] > 0 && rng.IntN(2) == 0 {
				ends[k]()
				want[k]--
			} else {
				starts[k]()
				want[k]++
			}
			v := viewOf(u)
			acc := want["accept"] + want["merge"] + want["check"] + want["review"]
			if v.Copying != want["copy"] || v.Accepting != acc || v.Deciding != want["decide"] {
				t.Fatalf("view copying %d accepting %d deciding %d, want %d %d %d", v.Copying, v.Accepting, v.Deciding, want["copy"], acc, want["decide"])
			}
		}
	}
}

// Merges go one at a time, in the order they were queued; the last one
// merged can be queued again at the head, and only it.
func TestUnderwayMergesOneAtATimeInOrder(t *testing.T) {
	t.Parallel()
	u := newUnderway()
	u.mergeQueued(mergeJob{id: "t001", attempt: 2})
	u.mergeQueued(mergeJob{id: "t002"})
	if _, err := u.mergeStarted("t002"); err == nil || !strings.Contains(err.Error(), "merge of t002 is not the queue's next") {
		t.Errorf("started t002 behind t001: err %v, want it refused", err)
	}
	if job, err := u.mergeStarted("t001"); err != nil || job.attempt != 2 {
		t.Fatalf("started %+v, %v: want t001's attempt 2", job, err)
	}
	if _, err := u.mergeStarted("t002"); err == nil {
		t.Error("a second merge started while one is under way")
	}
	if err := u.remerge("t001"); err == nil || !strings.Contains(err.Error(), "merge of t001 again") {
		t.Errorf("remerge of the merge under way: err %v, want it refused", err)
	}
	if job := u.mergeEnded(); job.id != "t001" {
		t.Errorf("ended %q, want t001", job.id)
	}
	if err := u.remerge("t002"); err == nil {
		t.Error("t002, never merged, was queued again as the last merged")
	}
	if err := u.remerge("t001"); err != nil {
		t.Fatal(err)
	}
	v := viewOf(u)
	if v.Merging || v.MergeNext != "t001" || v.Accepting != 2 {
		t.Errorf("view merging %v next %q accepting %d, want t001 again at the head of 2", v.Merging, v.MergeNext, v.Accepting)
	}
}
