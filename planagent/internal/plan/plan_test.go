package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// TestValidateReservesSummary checks planagent's own rule on top of
// planspec's (tested there): reports/summary.md belongs to the run.
func TestValidateReservesSummary(t *testing.T) {
	want := `task id "summary" is reserved (reports/summary.md is the run summary): choose another id`
	tests := []struct {
		name   string
		limits Limits
	}{
		{name: "default limits"},
		{name: "caller's reserved ids kept", limits: Limits{Reserved: map[string]string{"other": "taken"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Tasks: []Task{{ID: "summary", Description: "x"}, {ID: "other", Description: "y"}}}
			var ve *ValidationError
			if err := Validate(p, tt.limits); !errors.As(err, &ve) || !errors.Is(err, ErrInvalidPlan) || ve.Problems[0] != want {
				t.Fatalf("Validate() = %v, want a ValidationError starting with %q", err, want)
			}
			if tt.limits.Reserved != nil && (len(ve.Problems) != 2 || len(tt.limits.Reserved) != 1) {
				t.Errorf("problems %q; caller's map now %v (must not change)", ve.Problems, tt.limits.Reserved)
			}
		})
	}
}

func TestPlanGraph(t *testing.T) {
	p := &Plan{Title: "demo", Tasks: []Task{
		{ID: "api", Title: "API", Description: "write the API", Dependencies: []string{"store"}, Acceptance: []string{"go test ./api/..."}},
		{ID: "store", Description: "write the store"},
	}}
	g, err := Graph(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Order(); !slices.Equal(got, []string{"store", "api"}) {
		t.Errorf("Order() = %v", got)
	}
	api, _ := g.Get("api")
	if api.Status != taskgraph.Pending || api.Title != "API" || api.Acceptance[0] != "go test ./api/..." {
		t.Errorf("api task = %+v", api)
	}
	p.Tasks[1].Dependencies = []string{"api"}
	if _, err := Graph(p); !errors.Is(err, taskgraph.ErrCycle) || !strings.Contains(err.Error(), `plan "demo"`) {
		t.Errorf("Graph() of a cyclic plan: %v", err)
	}
}

// A planned task and its graph task carry the same fields both ways, the
// task's own budget under either of its names included.
func TestGraphTaskRoundTrip(t *testing.T) {
	for _, pt := range []Task{
		{ID: "a", Title: "A", Description: "do a", Dependencies: []string{"b"}, Acceptance: []string{"true"}, BudgetTokens: 5000},
		{ID: "a", Description: "do a", Dependencies: []string{}, TaskBudgetTokens: 7000, Attempts: 3},
	} {
		gt := GraphTask(pt)
		if gt.ID != pt.ID || gt.Title != pt.Title || gt.Description != pt.Description ||
			!slices.Equal(gt.Dependencies, pt.Dependencies) || !slices.Equal(gt.Acceptance, pt.Acceptance) ||
			gt.BudgetTokens != pt.TokenBudget() || gt.BestOf != pt.Attempts {
			t.Errorf("GraphTask(%+v) = %+v", pt, gt)
		}
		if back := PlanTask(gt); back.TokenBudget() != pt.TokenBudget() || back.Description != pt.Description || back.Attempts != pt.Attempts {
			t.Errorf("PlanTask(GraphTask(%+v)) = %+v", pt, back)
		}
	}
}
