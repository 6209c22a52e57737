package taskgraph

import (
	"fmt"

	"github.com/codeagent/codeagent/internal/planspec"
)

// FromPlanTask is plan task t as a pending task of the graph. It is the one
// place a planned task becomes a graph task (the plan, a plan file, a
// replan), so no path can drop a field, such as the task's own budget. It
// lives here, not with the planner, so that what only reads plans (the run
// record and its views) does not link the planner's LLM client.
func FromPlanTask(t planspec.Task) Task {
	return Task{
		ID: t.ID, Title: t.Title, Description: t.Description,
		Dependencies: t.Dependencies, Acceptance: t.Acceptance, BudgetTokens: t.TokenBudget(),
		BestOf: t.Attempts,
	}
}

// PlanTask is graph task t as the plan task it was made from (FromPlanTask's
// inverse), to validate a graph's tasks with a plan's rules.
func PlanTask(t Task) planspec.Task {
	return planspec.Task{ID: t.ID, Title: t.Title, Description: t.Description,
		Dependencies: t.Dependencies, Acceptance: t.Acceptance, BudgetTokens: t.BudgetTokens, Attempts: t.BestOf}
}

// FromPlan builds the task graph of p (all tasks pending).
func FromPlan(p *planspec.Plan) (*Graph, error) {
	tasks := make([]Task, len(p.Tasks))
	for i, t := range p.Tasks {
		tasks[i] = FromPlanTask(t)
	}
	g, err := New(tasks)
	if err != nil {
		return nil, fmt.Errorf("build task graph of plan %q: %w", p.Title, err)
	}
	return g, nil
}
