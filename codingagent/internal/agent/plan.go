package agent

import (
	"strings"

	"github.com/codeagent/codeagent/internal/planspec"
)

// The create_plan contract (types, parsing, validation, order, schema) is
// planspec's, shared with planagent's planner; the chat adds per-step risks
// and a testing strategy to the schema it offers.

// Plan is the create_plan tool's arguments.
type Plan = planspec.Plan

// PlanStep is one step of a plan.
type PlanStep = planspec.Task

// CreatePlanToolName is the planning tool's name, as planagent's planner has it.
const CreatePlanToolName = planspec.CreatePlanToolName

// StepTitle is a step's title, or the first line of its description.
func StepTitle(s PlanStep) string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return t
	}
	return firstLineOf(s.Description)
}
