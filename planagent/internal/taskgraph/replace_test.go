package taskgraph

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReplace(t *testing.T) {
	// a completed, b in progress, c failed, d skipped (by c), e pending.
	setup := func(t *testing.T) *Graph {
		g := mustNew(t, tk("a"), tk("b", "a"), tk("c", "a"), tk("d", "c"), tk("e"))
		for _, s := range []step{{"start", "a", ""}, {"complete", "a", "A"}, {"start", "b", ""}, {"start", "c", ""}, {"fail", "c", "x"}} {
			if err := apply(g, s); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	tests := []struct {
		name      string
		remaining []Task
		wantOrder []string
		wantReady []string
		is        error
		text      string
	}{
		{
			name:      "new tasks depend on completed and in-progress ones",
			remaining: []Task{tk("c2", "a"), tk("f", "c2", "b")},
			wantOrder: []string{"a", "b", "c2", "f"},
			wantReady: []string{"c2"},
		},
		{
			name:      "a dropped task's id may be reused",
			remaining: []Task{{ID: "c", Description: "redo c", Dependencies: []string{"a"}, Status: Failed, Attempts: 3}},
			wantOrder: []string{"a", "b", "c"},
			wantReady: []string{"c"},
		},
		{name: "empty replan keeps what is done", remaining: nil, wantOrder: []string{"a", "b"}},
		{name: "completed id cannot be replaced", remaining: []Task{tk("a")}, is: ErrDuplicateTask, text: `"a" is already completed`},
		{name: "in-progress id cannot be replaced", remaining: []Task{tk("b")}, is: ErrDuplicateTask, text: `"b" is already in_progress`},
		{name: "dependency on a dropped task", remaining: []Task{tk("f", "d")}, is: ErrUnknownDependency, text: `task "f" depends on unknown task "d"`},
		{name: "cycle among new tasks", remaining: []Task{tk("p", "q"), tk("q", "p")}, is: ErrCycle, text: "p -> q -> p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := setup(t)
			before := g.Summary()
			err := g.Replace(tt.remaining)
			if tt.is != nil {
				if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.text) {
					t.Fatalf("Replace() error = %v, want %v containing %q", err, tt.is, tt.text)
				}
				if g.Summary() != before {
					t.Errorf("failed Replace changed the graph:\n%s", g.Summary())
				}
				return
			}
			if err != nil {
				t.Fatalf("Replace: %v", err)
			}
			if got := g.Order(); !slices.Equal(got, tt.wantOrder) {
				t.Errorf("Order() = %v, want %v", got, tt.wantOrder)
			}
			if got := g.Ready(); !slices.Equal(got, tt.wantReady) {
				t.Errorf("Ready() = %v, want %v", got, tt.wantReady)
			}
			for _, nt := range tt.remaining {
				got, _ := g.Get(nt.ID)
				if got.Status != Pending || got.Attempts != 0 || got.Error != "" {
					t.Errorf("new task %s = %+v, want fresh pending", nt.ID, got)
				}
			}
			if a, _ := g.Get("a"); a.Result != "A" {
				t.Errorf("completed task lost its result: %+v", a)
			}
			if b, _ := g.Get("b"); b.Status != InProgress {
				t.Errorf("in-progress task b became %s", b.Status)
			}
		})
	}
}

// A replanned task keeps its own token budget.
func TestReplaceKeepsTheTaskBudget(t *testing.T) {
	g := mustNew(t, tk("a"))
	if err := g.Replace([]Task{{ID: "n", Description: "new", BudgetTokens: 5000}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Get("n"); n.BudgetTokens != 5000 {
		t.Errorf("budget after the replan = %d, want 5000", n.BudgetTokens)
	}
}
