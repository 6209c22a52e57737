// Package planspec is the create_plan contract shared by planagent's planner
// and the codingagent chat (DESIGN.md): the plan types, parsing of the tool's
// arguments, validation, dependency order and the tool schema. It is pure:
// no I/O, no model calls, so both sides judge a plan by the same rules.
package planspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CreatePlanToolName is the planning tool's name (a DESIGN.md contract).
const CreatePlanToolName = "create_plan"

// Task is one step of the plan as the model writes it. The JSON shape is
// persisted (planagent's runs/<run>/state.json, the chat state), so fields
// are only ever added, with omitempty.
type Task struct {
	ID           string   `json:"id"`
	Title        string   `json:"title,omitempty"`
	Description  string   `json:"description"`
	Dependencies []string `json:"dependencies"`
	// Acceptance holds shell commands run in the workspace; exit 0 = accepted.
	Acceptance []string `json:"acceptance,omitempty"`
	Risks      []string `json:"risks,omitempty"`
}

// Plan is the create_plan tool's arguments.
type Plan struct {
	Title           string   `json:"title"`
	Overview        string   `json:"overview"`
	Tasks           []Task   `json:"tasks"`
	Risks           []string `json:"risks,omitempty"`
	TestingStrategy string   `json:"testing_strategy,omitempty"`
}

// Parse decodes create_plan arguments without judging them (see Validate).
// Unknown fields are ignored because models add them freely; wrong types
// are reported with the field's path. Seed 003 calls the list "steps", so
// that name is accepted when "tasks" is absent.
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
