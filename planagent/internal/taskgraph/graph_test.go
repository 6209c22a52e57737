package taskgraph

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// tk builds a task: tk("c", "a", "b") is task c depending on a and b.
func tk(id string, deps ...string) Task {
	return Task{ID: id, Title: "title " + id, Description: "do " + id, Dependencies: deps}
}

func mustNew(t *testing.T, tasks ...Task) *Graph {
	t.Helper()
	g, err := New(tasks)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func TestNewOrder(t *testing.T) {
	tests := []struct {
		name  string
		tasks []Task
		want  []string
	}{
		{"empty", nil, []string{}},
		{"plan order kept when independent", []Task{tk("b"), tk("a"), tk("c")}, []string{"b", "a", "c"}},
		{"dependency moved first", []Task{tk("app", "lib"), tk("lib")}, []string{"lib", "app"}},
		{"diamond", []Task{tk("a"), tk("b", "a"), tk("c", "a"), tk("d", "b", "c")}, []string{"a", "b", "c", "d"}},
		{"ties broken by plan order", []Task{tk("z", "y"), tk("x"), tk("y")}, []string{"x", "y", "z"}},
		{"duplicate dependency tolerated", []Task{tk("a"), tk("b", "a", "a")}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustNew(t, tt.tasks...)
			if got := g.Order(); !slices.Equal(got, tt.want) {
				t.Errorf("Order() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name  string
		tasks []Task
		is    error
		text  string
	}{
		{"empty id", []Task{{Description: "x"}}, ErrEmptyID, `task 1 ("x")`},
		{"duplicate id", []Task{tk("a"), tk("a")}, ErrDuplicateTask, `"a" is used by more than one task`},
		{"unknown dependency", []Task{tk("b", "z")}, ErrUnknownDependency, `task "b" depends on unknown task "z"`},
		{"self dependency", []Task{tk("a", "a")}, ErrSelfDependency, `task "a" lists itself`},
		{"two-cycle", []Task{tk("a", "b"), tk("b", "a")}, ErrCycle, "dependency cycle: a -> b -> a"},
		{"cycle behind a prefix", []Task{tk("x", "a"), tk("a", "b"), tk("b", "c"), tk("c", "a")}, ErrCycle, "dependency cycle: a -> b -> c -> a"},
		{"bad status", []Task{{ID: "a", Status: "done"}}, ErrInvalidStatus, `invalid task status "done"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.tasks)
			if !errors.Is(err, tt.is) {
				t.Fatalf("New() error = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("New() error = %q, want it to contain %q", err, tt.text)
			}
		})
	}
}

// step is one transition in a scripted scenario.
type step struct {
	op, id, text string
}

func apply(g *Graph, s step) error {
	switch s.op {
	case "start":
		return g.Start(s.id)
	case "complete":
		return g.Complete(s.id, s.text)
	case "fail":
		return g.Fail(s.id, s.text)
	case "retry":
		return g.Retry(s.id)
	}
	panic("unknown op " + s.op)
}

func statuses(g *Graph) map[string]Status {
	m := map[string]Status{}
	for _, t := range g.Tasks() {
		m[t.ID] = t.Status
	}
	return m
}

func TestTransitions(t *testing.T) {
	diamond := []Task{tk("a"), tk("b", "a"), tk("c", "a"), tk("d", "b", "c"), tk("e")}
	tests := []struct {
		name      string
		tasks     []Task
		steps     []step
		wantReady []string
		want      map[string]Status
		wantBy    map[string]string // SkippedBy of skipped tasks
	}{
		{
			name: "fresh diamond", tasks: diamond,
			wantReady: []string{"a", "e"},
			want:      map[string]Status{"a": Pending, "b": Pending, "c": Pending, "d": Pending, "e": Pending},
		},
		{
			name: "both branches ready after root completes", tasks: diamond,
			steps:     []step{{"start", "a", ""}, {"complete", "a", "ok"}},
			wantReady: []string{"b", "c", "e"},
			want:      map[string]Status{"a": Completed, "b": Pending, "c": Pending, "d": Pending, "e": Pending},
		},
		{
			name: "join waits for both branches", tasks: diamond,
			steps:     []step{{"start", "a", ""}, {"complete", "a", ""}, {"start", "b", ""}, {"complete", "b", ""}},
			wantReady: []string{"c", "e"},
			want:      map[string]Status{"a": Completed, "b": Completed, "c": Pending, "d": Pending, "e": Pending},
		},
		{
			name: "failed root skips the whole diamond, not the independent task", tasks: diamond,
			steps:     []step{{"start", "a", ""}, {"fail", "a", "boom"}},
			wantReady: []string{"e"},
			want:      map[string]Status{"a": Failed, "b": Skipped, "c": Skipped, "d": Skipped, "e": Pending},
			wantBy:    map[string]string{"b": "a", "c": "a", "d": "a"},
		},
		{
			name: "failed branch skips the join only", tasks: diamond,
			steps:     []step{{"start", "a", ""}, {"complete", "a", ""}, {"start", "b", ""}, {"fail", "b", "x"}},
			wantReady: []string{"c", "e"},
			want:      map[string]Status{"a": Completed, "b": Failed, "c": Pending, "d": Skipped, "e": Pending},
			wantBy:    map[string]string{"d": "b"},
		},
		{
			name: "retry restores its downstream", tasks: diamond,
			steps:     []step{{"start", "a", ""}, {"fail", "a", "boom"}, {"retry", "a", ""}},
			wantReady: []string{"a", "e"},
			want:      map[string]Status{"a": Pending, "b": Pending, "c": Pending, "d": Pending, "e": Pending},
		},
		{
			name: "retry of one branch leaves the join skipped by the other failed branch", tasks: diamond,
			steps: []step{
				{"start", "a", ""}, {"complete", "a", ""},
				{"start", "b", ""}, {"fail", "b", "x"},
				{"start", "c", ""}, {"fail", "c", "y"},
				{"retry", "b", ""},
			},
			wantReady: []string{"b", "e"},
			want:      map[string]Status{"a": Completed, "b": Pending, "c": Failed, "d": Skipped, "e": Pending},
			wantBy:    map[string]string{"d": "c"},
		},
		{
			name:  "retry restores only the tasks it skipped",
			tasks: []Task{tk("a"), tk("b", "a"), tk("x"), tk("y", "x")},
			steps: []step{
				{"start", "a", ""}, {"fail", "a", "1"},
				{"start", "x", ""}, {"fail", "x", "2"},
				{"retry", "a", ""},
			},
			wantReady: []string{"a"},
			want:      map[string]Status{"a": Pending, "b": Pending, "x": Failed, "y": Skipped},
			wantBy:    map[string]string{"y": "x"},
		},
		{
			name:      "pending task that could not be dispatched can fail",
			tasks:     []Task{tk("a"), tk("b", "a")},
			steps:     []step{{"fail", "a", "no command written"}},
			wantReady: nil,
			want:      map[string]Status{"a": Failed, "b": Skipped},
			wantBy:    map[string]string{"b": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustNew(t, tt.tasks...)
			for _, s := range tt.steps {
				if err := apply(g, s); err != nil {
					t.Fatalf("%s %s: %v", s.op, s.id, err)
				}
			}
			if got := g.Ready(); !slices.Equal(got, tt.wantReady) {
				t.Errorf("Ready() = %v, want %v", got, tt.wantReady)
			}
			for id, want := range tt.want {
				task, _ := g.Get(id)
				if task.Status != want {
					t.Errorf("task %s status = %s, want %s", id, task.Status, want)
				}
				if want == Skipped && task.SkippedBy != tt.wantBy[id] {
					t.Errorf("task %s SkippedBy = %q, want %q", id, task.SkippedBy, tt.wantBy[id])
				}
			}
		})
	}
}

func TestIllegalTransitions(t *testing.T) {
	tests := []struct {
		name  string
		setup []step
		bad   step
		is    error
	}{
		{"unknown task", nil, step{"start", "nope", ""}, ErrUnknownTask},
		{"start before dependency completes", nil, step{"start", "b", ""}, ErrNotReady},
		{"start twice", []step{{"start", "a", ""}}, step{"start", "a", ""}, ErrIllegalTransition},
		{"complete without start", nil, step{"complete", "a", ""}, ErrIllegalTransition},
		{"complete twice", []step{{"start", "a", ""}, {"complete", "a", ""}}, step{"complete", "a", ""}, ErrIllegalTransition},
		{"fail a completed task", []step{{"start", "a", ""}, {"complete", "a", ""}}, step{"fail", "a", ""}, ErrIllegalTransition},
		{"fail a skipped task", []step{{"fail", "a", ""}}, step{"fail", "b", ""}, ErrIllegalTransition},
		{"retry a pending task", nil, step{"retry", "a", ""}, ErrIllegalTransition},
		{"retry a skipped task", []step{{"fail", "a", ""}}, step{"retry", "b", ""}, ErrIllegalTransition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustNew(t, tk("a"), tk("b", "a"))
			for _, s := range tt.setup {
				if err := apply(g, s); err != nil {
					t.Fatalf("setup %s %s: %v", s.op, s.id, err)
				}
			}
			before := statuses(g)
			err := apply(g, tt.bad)
			if !errors.Is(err, tt.is) {
				t.Fatalf("%s %s: error = %v, want %v", tt.bad.op, tt.bad.id, err, tt.is)
			}
			if !strings.Contains(err.Error(), `"`+tt.bad.id+`"`) {
				t.Errorf("error %q does not name task %q", err, tt.bad.id)
			}
			if after := statuses(g); !mapsEqual(before, after) {
				t.Errorf("failed transition changed the graph: %v -> %v", before, after)
			}
		})
	}
}

func mapsEqual(a, b map[string]Status) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestAttemptsAndError(t *testing.T) {
	g := mustNew(t, tk("a"))
	for _, s := range []step{{"start", "a", ""}, {"fail", "a", "first try broke"}, {"retry", "a", ""}, {"start", "a", ""}} {
		if err := apply(g, s); err != nil {
			t.Fatalf("%s: %v", s.op, err)
		}
	}
	a, _ := g.Get("a")
	if a.Attempts != 2 || a.Error != "first try broke" {
		t.Errorf("after retry+start: attempts=%d error=%q, want 2 and the previous error", a.Attempts, a.Error)
	}
	if err := g.Complete("a", "fine"); err != nil {
		t.Fatal(err)
	}
	if a, _ = g.Get("a"); a.Error != "" || a.Result != "fine" {
		t.Errorf("after complete: error=%q result=%q, want error cleared", a.Error, a.Result)
	}
}

func TestDoneAndCounts(t *testing.T) {
	g := mustNew(t, tk("a"), tk("b", "a"), tk("c"))
	if g.Done() {
		t.Fatal("Done() on a fresh graph")
	}
	for _, s := range []step{{"start", "a", ""}, {"fail", "a", "x"}, {"start", "c", ""}} {
		if err := apply(g, s); err != nil {
			t.Fatal(err)
		}
	}
	if g.Done() {
		t.Error("Done() with a task in progress")
	}
	if err := g.Complete("c", ""); err != nil {
		t.Fatal(err)
	}
	if !g.Done() {
		t.Error("Done() = false with only failed/skipped/completed tasks")
	}
	want := map[Status]int{Failed: 1, Skipped: 1, Completed: 1}
	got := g.Counts()
	if len(got) != len(want) || got[Failed] != 1 || got[Skipped] != 1 || got[Completed] != 1 {
		t.Errorf("Counts() = %v, want %v", got, want)
	}
}

func TestGetAndTasksReturnCopies(t *testing.T) {
	g := mustNew(t, tk("a"), tk("b", "a"))
	b, _ := g.Get("b")
	b.Dependencies[0] = "mutated"
	tasks := g.Tasks()
	tasks[1].Dependencies[0] = "mutated"
	if got, _ := g.Get("b"); got.Dependencies[0] != "a" {
		t.Errorf("caller mutation leaked into the graph: %v", got.Dependencies)
	}
	if _, ok := g.Get("zzz"); ok {
		t.Error("Get of an unknown id reported ok")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	g := mustNew(t, tk("a"), tk("b", "a"), tk("c", "b"), tk("d"))
	for _, s := range []step{{"start", "a", ""}, {"complete", "a", "done a"}, {"start", "b", ""}, {"fail", "b", "bad"}, {"start", "d", ""}} {
		if err := apply(g, s); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Graph
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	if back.Summary() != g.Summary() || !slices.Equal(back.Order(), g.Order()) {
		t.Errorf("round trip changed the graph:\n%s\nvs\n%s", back.Summary(), g.Summary())
	}
	if err := back.Retry("b"); err != nil {
		t.Fatalf("Retry after reload: %v", err)
	}
	if c, _ := back.Get("c"); c.Status != Pending {
		t.Errorf("reloaded graph lost skip cause: c is %s", c.Status)
	}

	var bad Graph
	err = json.Unmarshal([]byte(`{"tasks":[{"id":"a","dependencies":["a"]}]}`), &bad)
	if !errors.Is(err, ErrSelfDependency) {
		t.Errorf("Unmarshal of an invalid graph: error = %v, want ErrSelfDependency", err)
	}
	empty, _ := json.Marshal(&Graph{})
	if string(empty) != `{"tasks":[]}` {
		t.Errorf("empty graph marshals to %s", empty)
	}
}

// A task whose attempts run side by side counts each one started while it
// stays in_progress; only an in-progress task may start another.
func TestStartAnother(t *testing.T) {
	g := mustNew(t, Task{ID: "a", Description: "a"})
	if err := g.StartAnother("a"); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("another attempt of a pending task: %v, want an illegal transition", err)
	}
	if err := g.Start("a"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := g.StartAnother("a"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := g.Get("a"); got.Status != InProgress || got.Attempts != 3 {
		t.Errorf("after three starts: %s, %d attempts", got.Status, got.Attempts)
	}
	if err := g.StartAnother("nope"); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("unknown task: %v", err)
	}
}
