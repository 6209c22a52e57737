package series

import (
	"reflect"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// op is one operation on task "t1"'s series, with its record.
type op func(tr *Tracker, in *runrecord.TaskInfo) error

func begin(from, bestOf int) op {
	return func(tr *Tracker, in *runrecord.TaskInfo) error {
		tr.Begin("t1", in, from, bestOf, "base")
		return nil
	}
}
func started(n int) op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { return tr.Started("t1", n) }
}
func resumed(live ...int) op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { return tr.Resumed("t1", live...) }
}
func checked(n int) op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { return tr.Checked("t1", n) }
}
func ended(n int, reason string) op {
	return func(tr *Tracker, in *runrecord.TaskInfo) error { return tr.Ended("t1", n, reason, in) }
}
func stopped(n int) op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { return tr.Stopped("t1", n, "another won") }
}
func chosen(n int) op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { return tr.Chosen("t1", n) }
}
func askJudge() op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { return tr.UnderReview("t1") }
}
func reviewed(pick int, reason string) op {
	return func(tr *Tracker, in *runrecord.TaskInfo) error { return tr.Reviewed("t1", in, pick, reason) }
}
func finished() op {
	return func(tr *Tracker, _ *runrecord.TaskInfo) error { tr.Finished("t1"); return nil }
}

// snapshot is everything the Tracker shows of task t1's series and what it
// wrote of it on the record.
type snapshot struct {
	View    next.Task
	Live    []int
	Stopped []bool // attempts 1 to 5
	Tasks   []string
	Record  runrecord.Series
}

func snap(tr *Tracker, in *runrecord.TaskInfo) snapshot {
	s := snapshot{Live: tr.Live("t1"), Tasks: tr.Tasks()}
	s.View.BestOf = 3
	tr.View("t1", in, true, &s.View)
	for n := 1; n <= 5; n++ {
		s.Stopped = append(s.Stopped, tr.IsStopped("t1", n))
	}
	if in.Series != nil {
		s.Record = *in.Series
	}
	return s
}

func run(t *testing.T, tr *Tracker, in *runrecord.TaskInfo, ops []op) {
	t.Helper()
	for i, o := range ops {
		if err := o(tr, in); err != nil {
			t.Fatalf("operation %d: %v", i, err)
		}
	}
}

// What cannot happen to a series is refused, named, and leaves the series
// (and its record) as it was: the executor returns the error and the run
// stops rather than next deciding on a series that cannot be.
func TestTrackerRefusesTheImpossible(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []op
		op     op
		want   string
	}{
		{"an attempt with no series begun", nil, started(1), "attempt 1 of task t1 started with no series begun"},
		{"an attempt after its series finished", []op{begin(1, 3), started(1), finished()}, started(2), "started with no series begun"},
		{"an attempt started twice", []op{begin(1, 3), started(1)}, started(1), "attempt 1 of task t1 started twice"},
		{"a stopped attempt started again", []op{begin(1, 3), started(1), stopped(1)}, started(1), "started twice"},
		{"a series taken up twice", []op{resumed(2)}, resumed(), "task t1's series taken up while the loop already has it"},
		{"a series taken up after it began", []op{begin(1, 3)}, resumed(1), "already has it"},
		{"a check of an attempt never started", []op{begin(1, 3)}, checked(2), "attempt 2 of task t1 checked while not under way"},
		{"a check with no series", nil, checked(1), "checked while not under way"},
		{"a check that came back twice", []op{begin(1, 3), started(1), checked(1)}, checked(1), "checked while not under way"},
		{"a check of a stopped attempt", []op{begin(1, 3), started(1), stopped(1)}, checked(1), "checked while not under way"},
		{"an end with no series", nil, ended(1, "boom"), "attempt 1 of task t1 ended with no series under way"},
		{"an end after the series finished", []op{begin(1, 3), started(1), checked(1), finished()}, ended(1, "boom"), "ended with no series"},
		{"an end of a stopped attempt", []op{begin(1, 3), started(1), stopped(1)}, ended(1, "boom"), "attempt 1 of task t1 ended after it was stopped"},
		{"a stop of an attempt checked", []op{begin(1, 3), started(1), checked(1)}, stopped(1), "attempt 1 of task t1 stopped while not under way"},
		{"a stop of an attempt never started", []op{begin(1, 3), started(1)}, stopped(2), "stopped while not under way"},
		{"a stop twice", []op{begin(1, 3), started(1), stopped(1)}, stopped(1), "stopped while not under way"},
		{"a stop with no series", nil, stopped(1), "stopped while not under way"},
		{"a choice with no series", nil, chosen(1), "attempt 1 of task t1 chosen with no series under way"},
		{"a choice of no attempt", []op{begin(1, 3)}, chosen(0), "attempt 0 of task t1 chosen: no such attempt"},
		{"a choice of the review's mark", []op{begin(1, 3)}, chosen(underReview), "chosen: no such attempt"},
		{"a second choice", []op{begin(1, 3), started(1), started(2), checked(1), checked(2), chosen(1)}, chosen(2),
			"attempt 2 of task t1 chosen while attempt 1 is"},
		{"a choice during the review", []op{begin(1, 3), started(1), checked(1), askJudge()}, chosen(1),
			"attempt 1 of task t1 chosen while the LLM judge is asked"},
		{"a choice of a live attempt", []op{begin(1, 3), started(1)}, chosen(1), "attempt 1 of task t1 chosen before it passed its check"},
		{"a choice of a stopped attempt", []op{begin(1, 3), started(1), stopped(1)}, chosen(1), "chosen before it passed its check"},
		{"a review with no series", nil, askJudge(), "task t1 under review with no series under way"},
		{"a review twice", []op{begin(1, 3), askJudge()}, askJudge(), "task t1 under review twice"},
		{"a review of a chosen one", []op{begin(1, 3), started(1), checked(1), chosen(1)}, askJudge(), "task t1 under review while attempt 1 is chosen"},
		{"an answer with no review", []op{begin(1, 3)}, reviewed(1, "best"), "task t1 reviewed while not under review"},
		{"an answer twice", []op{begin(1, 3), askJudge(), reviewed(0, "")}, reviewed(1, "best"), "reviewed while not under review"},
		{"an answer with no series", nil, reviewed(1, "best"), "reviewed while not under review"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, in := New(), &runrecord.TaskInfo{}
			run(t, tr, in, tc.before)
			was := snap(tr, in)
			err := tc.op(tr, in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one saying %q", err, tc.want)
			}
			if now := snap(tr, in); !reflect.DeepEqual(now, was) {
				t.Errorf("a refused operation changed the series:\nbefore %+v\nafter  %+v", was, now)
			}
		})
	}
}

// What each operation changes, read through what next reads (View) and
// what the record keeps.
func TestTrackerOperations(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   runrecord.TaskInfo // the record before
		ops  []op
		want snapshot
	}{
		{
			name: "a task's first series has its attempts",
			ops:  []op{begin(1, 2), started(1), started(2)},
			want: snapshot{View: next.Task{Series: 2, Live: 2}, Live: []int{1, 2}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 2, Base: "base"}},
		},
		{
			name: "a series after a retry has one",
			in:   runrecord.TaskInfo{Series: &runrecord.Series{From: 1, Size: 3, Base: "old", FirstError: "boom"}},
			ops:  []op{begin(4, 3), started(4)},
			want: snapshot{View: next.Task{Series: 1, Live: 1}, Live: []int{4}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 4, Size: 1, Base: "base"}},
		},
		{
			name: "a series begun afresh drops the earlier one's attempts, stop and choice",
			ops: []op{begin(1, 3), started(1), started(2), started(3), stopped(3), checked(1), chosen(1), ended(2, "boom"),
				begin(4, 3), started(4)},
			want: snapshot{View: next.Task{Series: 1, Live: 1}, Live: []int{4}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 4, Size: 1, Base: "base"}},
		},
		{
			name: "the first attempt's failure goes on the record, a later one's does not",
			ops:  []op{begin(1, 3), started(1), started(2), ended(1, "first broke"), ended(2, "second broke")},
			want: snapshot{View: next.Task{Series: 3, LastError: "second broke"}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base", FirstError: "first broke"}},
		},
		{
			name: "a checked attempt is no longer under way",
			ops:  []op{begin(1, 3), started(1), started(2), checked(2)},
			want: snapshot{View: next.Task{Series: 3, Live: 1}, Live: []int{1}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base"}},
		},
		{
			name: "a stopped attempt is neither under way nor launched",
			ops:  []op{begin(1, 3), started(1), started(2), stopped(2)},
			want: snapshot{View: next.Task{Series: 3, Live: 1, LastError: "another won"}, Live: []int{1},
				Stopped: []bool{false, true, false, false, false}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base"}},
		},
		{
			name: "the chosen one rejected by the gate: the task may choose again",
			ops:  []op{begin(1, 3), started(1), started(2), checked(1), checked(2), chosen(1), ended(1, "the gate failed"), chosen(2)},
			want: snapshot{View: next.Task{Series: 3, Chosen: true, LastError: "the gate failed"}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base", FirstError: "the gate failed"}},
		},
		{
			name: "under review the task counts as chosen",
			ops:  []op{begin(1, 3), started(1), checked(1), askJudge()},
			want: snapshot{View: next.Task{Series: 3, Chosen: true}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base"}},
		},
		{
			name: "the judge's pick goes on the record, and the task chooses",
			ops:  []op{begin(1, 3), started(1), checked(1), askJudge(), reviewed(1, "smaller"), chosen(1)},
			want: snapshot{View: next.Task{Series: 3, Chosen: true}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base", Reviewed: true, Pick: 1, Reason: "smaller"}},
		},
		{
			name: "no usable pick: reviewed, nothing picked",
			ops:  []op{begin(1, 3), started(1), checked(1), askJudge(), reviewed(0, "")},
			want: snapshot{View: next.Task{Series: 3}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 3, Base: "base", Reviewed: true}},
		},
		{
			name: "a resumed series has the attempts the record left under way",
			in:   runrecord.TaskInfo{Series: &runrecord.Series{From: 2, Size: 3, Base: "b"}},
			ops:  []op{resumed(2, 4), started(5), checked(4)},
			want: snapshot{View: next.Task{Series: 3, Live: 2}, Live: []int{2, 5}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 2, Size: 3, Base: "b"}},
		},
		{
			name: "a resumed series with nothing under way is still the loop's",
			in:   runrecord.TaskInfo{Series: &runrecord.Series{From: 1, Size: 2, Base: "b"}},
			ops:  []op{resumed(), chosen(2)},
			want: snapshot{View: next.Task{Series: 2, Chosen: true}, Tasks: []string{"t1"},
				Record: runrecord.Series{From: 1, Size: 2, Base: "b"}},
		},
		{
			name: "a finished series is the loop's no more; the record keeps it",
			ops:  []op{begin(1, 3), started(1), checked(1), chosen(1), finished()},
			want: snapshot{View: next.Task{Series: 3}, Record: runrecord.Series{From: 1, Size: 3, Base: "base"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, in := New(), &tc.in
			run(t, tr, in, tc.ops)
			want := tc.want
			want.View.BestOf = 3
			if want.Stopped == nil {
				want.Stopped = make([]bool, 5)
			}
			if got := snap(tr, in); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// The budget stopped a series before an attempt passed: the record and
// the loop forget it, and the task's next dispatch begins a whole series
// (its attempts, not a retry's one).
func TestTrackerRequeued(t *testing.T) {
	tr, in := New(), &runrecord.TaskInfo{}
	run(t, tr, in, []op{begin(1, 3), started(1), started(2), stopped(1), stopped(2)})
	tr.Requeued("t1", in)
	if in.Series != nil || len(tr.Tasks()) != 0 || tr.IsStopped("t1", 1) {
		t.Fatalf("after the requeue: record %+v, tasks %v, attempt 1 stopped %v", in.Series, tr.Tasks(), tr.IsStopped("t1", 1))
	}
	run(t, tr, in, []op{begin(3, 3), started(3)})
	if in.Series.Size != 3 || in.Series.From != 3 {
		t.Errorf("the series after the requeue %+v, want three attempts from 3", in.Series)
	}
}

// next reads a series' counts from the record's results and the loop's
// state together; reading makes no series.
func TestTrackerView(t *testing.T) {
	results := []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed"}, // an earlier series
		{Attempt: 2, Status: "failed"}, // this series' first
		{Attempt: 3, Status: "held"},
		{Attempt: 4, Status: "held"}, // chosen below: not counted held
		{Attempt: 5, Status: "checking"},
		{Attempt: 6, Status: "stopped"},
	}
	for _, tc := range []struct {
		name       string
		in         *runrecord.TaskInfo
		inProgress bool
		loop       []op
		want       next.Task
	}{
		{name: "no record", want: next.Task{BestOf: 3, Series: 3}},
		{name: "no series on the record", in: &runrecord.TaskInfo{Results: results}, inProgress: true,
			want: next.Task{BestOf: 3, Series: 3}},
		{name: "a task not in progress is read as a retry's series",
			in:   &runrecord.TaskInfo{Series: &runrecord.Series{From: 2, Size: 3}, Results: results},
			want: next.Task{BestOf: 3, Series: 1}},
		{name: "a series the loop has not taken up has nothing under way",
			in:         &runrecord.TaskInfo{Series: &runrecord.Series{From: 2, Size: 3}, Results: results},
			inProgress: true,
			want:       next.Task{BestOf: 3, Series: 3, Started: 5, Held: 2, FirstFailed: true}},
		{name: "in progress",
			in:         &runrecord.TaskInfo{Series: &runrecord.Series{From: 2, Size: 3}, Results: results},
			inProgress: true,
			loop:       []op{resumed(5), chosen(4), started(7)},
			want:       next.Task{BestOf: 3, Series: 3, Started: 5, Held: 1, FirstFailed: true, Live: 2, Chosen: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			run(t, tr, tc.in, tc.loop)
			had := tr.Tasks()
			got := next.Task{BestOf: 3}
			tr.View("t1", tc.in, tc.inProgress, &got)
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if now := tr.Tasks(); !reflect.DeepEqual(now, had) {
				t.Errorf("reading changed the series under way: %v, was %v", now, had)
			}
		})
	}
}

// The tasks with a series are read in order: next goes through them so.
func TestTrackerTasksSorted(t *testing.T) {
	tr := New()
	for _, id := range []string{"t3", "t1", "t2"} {
		tr.Begin(id, &runrecord.TaskInfo{}, 1, 2, "b")
	}
	if err := tr.Resumed("t0"); err != nil {
		t.Fatal(err)
	}
	tr.Finished("t2")
	if got, want := tr.Tasks(), []string{"t0", "t1", "t3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
