// Package plan turns a goal into a validated plan: the Planner runs the LLM
// over the workspace with read-only tools until it calls create_plan with a
// plan that passes planspec's rules plus planagent's own (the reserved
// "summary" id), and Graph turns the plan into a task graph.
package plan

import (
	"errors"
	"fmt"
	"maps"

	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The create_plan contract lives in planspec, shared with the coding
// agent's chat; these names keep planagent's callers short.
type (
	Task            = planspec.Task
	Plan            = planspec.Plan
	Limits          = planspec.Limits
	ValidationError = planspec.ValidationError
)

// CreatePlanToolName is the planner tool's name: the codingagent chat offers
// the same tool, and the plan-file format is its arguments.
const CreatePlanToolName = planspec.CreatePlanToolName

var (
	// ErrInvalidPlan is a plan that breaks the rules. Planner errors wrap it
	// when the model did not fix its plan within the allowed repairs.
	ErrInvalidPlan = planspec.ErrInvalidPlan
	// ErrNoPlan is a planning conversation that ended without create_plan.
	ErrNoPlan = errors.New("planner made no plan")
)

// reservedIDs are task ids planagent cannot use: reports/<id>.md would
// collide with the run's own files.
var reservedIDs = map[string]string{"summary": "reports/summary.md is the run summary"}

// Validate is planspec.Validate with planagent's reserved ids added to
// limits.
func Validate(p *Plan, limits Limits) error {
	reserved := maps.Clone(limits.Reserved)
	if reserved == nil {
		reserved = map[string]string{}
	}
	maps.Copy(reserved, reservedIDs)
	limits.Reserved = reserved
	return planspec.Validate(p, limits)
}

// GraphTask is plan task t as a pending task of the graph. It is the one
// place a planned task becomes a graph task (the plan, a plan file, a
// replan), so no path can drop a field, such as the task's own budget.
func GraphTask(t Task) taskgraph.Task {
	return taskgraph.Task{
		ID: t.ID, Title: t.Title, Description: t.Description,
		Dependencies: t.Dependencies, Acceptance: t.Acceptance, BudgetTokens: t.TokenBudget(),
		BestOf: t.Attempts,
	}
}

// PlanTask is graph task t as the plan task it was made from (GraphTask's
// inverse), to validate a graph's tasks with a plan's rules.
func PlanTask(t taskgraph.Task) Task {
	return Task{ID: t.ID, Title: t.Title, Description: t.Description,
		Dependencies: t.Dependencies, Acceptance: t.Acceptance, BudgetTokens: t.BudgetTokens, Attempts: t.BestOf}
}

// Graph builds the task graph of p (all tasks pending).
func Graph(p *Plan) (*taskgraph.Graph, error) {
	tasks := make([]taskgraph.Task, len(p.Tasks))
	for i, t := range p.Tasks {
		tasks[i] = GraphTask(t)
	}
	g, err := taskgraph.New(tasks)
	if err != nil {
		return nil, fmt.Errorf("build task graph of plan %q: %w", p.Title, err)
	}
	return g, nil
}
