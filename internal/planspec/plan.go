// Package planspec is the create_plan contract shared by planagent's planner
// and the codingagent chat: the plan types, parsing of the tool's
// arguments, validation, dependency order and the tool schema. It is pure:
// no I/O, no model calls, so both sides judge a plan by the same rules.
package planspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CreatePlanToolName is the planning tool's name, the same for the planner,
// the chat and plan files.
const CreatePlanToolName = "create_plan"

// Task is one step of the plan as the model writes it. The JSON shape is
// persisted (planagent's runs/<run>/state.json, the chat state), so fields
// are only ever added, with omitempty.
type Task struct {
	ID           string   `json:"id" yaml:"id"`
	Title        string   `json:"title,omitempty" yaml:"title,omitempty"`
	Description  string   `json:"description" yaml:"description"`
	Dependencies []string `json:"dependencies" yaml:"dependencies"`
	// Acceptance holds shell commands run in the workspace; exit 0 = accepted.
	Acceptance []string `json:"acceptance,omitempty" yaml:"acceptance,omitempty"`
	Risks      []string `json:"risks,omitempty" yaml:"risks,omitempty"`
	// BudgetTokens overrides the run's task_budget_tokens for this task
	// (plan files; the planner's schema does not offer it).
	BudgetTokens int `json:"budget_tokens,omitempty" yaml:"budget_tokens,omitempty"`
	// TaskBudgetTokens is BudgetTokens under the config key's name, which a
	// plan may use as well; Validate refuses the two with different values.
	// Read the budget with TokenBudget.
	TaskBudgetTokens int `json:"task_budget_tokens,omitempty" yaml:"task_budget_tokens,omitempty"`
	// Attempts is how many independent attempts the task may get, the
	// best passing one merged (0: the run's attempts setting). How they
	// run (all at once, or more only after the first fails) is the run's
	// attempt_policy.
	Attempts int `json:"attempts,omitempty" yaml:"attempts,omitempty"`
}

// TokenBudget is the task's own token budget, under either name (0: the
// run's task_budget_tokens applies).
func (t Task) TokenBudget() int {
	if t.BudgetTokens != 0 {
		return t.BudgetTokens
	}
	return t.TaskBudgetTokens
}

// Plan is the create_plan tool's arguments (and a plan file's content:
// the yaml tags give YAML files the same field names).
type Plan struct {
	Title           string   `json:"title" yaml:"title"`
	Overview        string   `json:"overview" yaml:"overview"`
	Tasks           []Task   `json:"tasks" yaml:"tasks"`
	Risks           []string `json:"risks,omitempty" yaml:"risks,omitempty"`
	TestingStrategy string   `json:"testing_strategy,omitempty" yaml:"testing_strategy,omitempty"`
}

// Parse decodes create_plan arguments without judging them (see Validate).
// Unknown fields are ignored because models add them freely; wrong types
// are reported with the field's path. Models sometimes call the list
// "steps" (the chat shows a plan as steps), so that name is accepted when
// "tasks" is absent.
func Parse(args string) (*Plan, error) {
	if strings.TrimSpace(args) == "" {
		return nil, fmt.Errorf(`%w: create_plan arguments are empty: pass {"tasks": [{"id", "description", "dependencies"}]}`, ErrInvalidPlan)
	}
	var p Plan
	if err := decode(args, &p); err != nil {
		return nil, err
	}
	if len(p.Tasks) == 0 {
		// A separate decode, not an embedded struct: embedding would put
		// "Plan." in front of every field path in the type errors above.
		var alias struct {
			Steps []Task `json:"steps"`
		}
		if err := decode(args, &alias); err != nil {
			return nil, err
		}
		p.Tasks = alias.Steps
	}
	return &p, nil
}

// decode reports wrong types with the field's path, which a model can act on.
func decode(args string, v any) error {
	err := json.Unmarshal([]byte(args), v)
	if err == nil {
		return nil
	}
	problem := err.Error()
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		problem = fmt.Sprintf("field %q must be %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	return fmt.Errorf("%w: create_plan arguments are not valid JSON for the schema: %s", ErrInvalidPlan, problem)
}
