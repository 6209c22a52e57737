// Package plan turns a goal into a validated plan: the Planner runs the LLM
// over the workspace with read-only tools until it calls create_plan with a
// plan that passes planspec's rules plus planagent's own (the reserved
// "summary" id), and Graph turns the plan into a task graph.
package plan

import (
	"errors"
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

// GraphTask is taskgraph.FromPlanTask: the one place a planned task becomes
// a graph task.
func GraphTask(t Task) taskgraph.Task { return taskgraph.FromPlanTask(t) }

// PlanTask is graph task t as the plan task it was made from (GraphTask's
// inverse), to validate a graph's tasks with a plan's rules.
func PlanTask(t taskgraph.Task) Task { return taskgraph.PlanTask(t) }

// Graph builds the task graph of p (all tasks pending).
func Graph(p *Plan) (*taskgraph.Graph, error) { return taskgraph.FromPlan(p) }
