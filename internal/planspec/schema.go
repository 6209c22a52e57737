package planspec

import (
	"encoding/json"
	"fmt"

	"github.com/codeagent/codeagent/internal/jsonschema"
	"github.com/codeagent/codeagent/internal/protocol"
)

// ToolOptions pick the optional parts of the create_plan schema, so a model
// is only offered fields its caller acts on.
type ToolOptions struct {
	// Description says when and how to call the tool (default: the
	// planner's "call it exactly once" text).
	Description string
	Acceptance  bool // per-task acceptance commands (planagent runs them)
	TaskRisks   bool // per-task risks (the chat shows them)
	Testing     bool // the plan's testing strategy (the chat shows it)
	// Attempts offers per-task attempts (best-of-N; planagent runs them).
	Attempts bool
}

const defaultToolDescription = "Submit the plan for the goal. Call it exactly once, after exploring the workspace. " +
	"An invalid plan is rejected with the exact problem; fix it and call again."

// Tool is a function definition offered to the model, field for field an
// llm.Tool: callers convert it (llm.Tool(CreatePlanTool(o))), so that
// planspec, and taskgraph with it, do not link the LLM clients.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments
}

// CreatePlanTool is the create_plan function schema. It is written by hand
// rather than generated from Plan: generation emits $defs/$ref, which some
// OpenAI-compatible servers reject, and would make title and overview
// required, while the contract requires only tasks with id, description and
// dependencies.
func CreatePlanTool(o ToolOptions) Tool {
	str := func(desc string) jsonschema.Schema {
		return jsonschema.Schema{Type: jsonschema.String, Description: desc}
	}
	strs := func(desc string) jsonschema.Schema {
		return jsonschema.Schema{Type: jsonschema.Array, Description: desc, Items: &jsonschema.Schema{Type: jsonschema.String}}
	}
	task := jsonschema.Schema{
		Type: jsonschema.Object,
		Properties: map[string]jsonschema.Schema{
			"id": str(fmt.Sprintf("Short unique id, e.g. \"add-store\": 1-%d letters, digits, '-', '_' or '.', not starting with '.'.",
				protocol.MaxIDLength)),
			"title": str("A few words naming the task."),
			"description": str("Everything the coding agent needs to do this task on its own: " +
				"what to change, where, and how to check it. It sees only this task and the project overview."),
			"dependencies": strs("Ids of the tasks that must be completed first. Empty when the task can start at once."),
		},
		Required: []string{"id", "description", "dependencies"},
	}
	if o.Acceptance {
		task.Properties["acceptance"] = strs("Shell commands run from the workspace root after the task; each must exit 0 " +
			"(e.g. \"go test ./store/...\").")
	}
	if o.Attempts {
		task.Properties["attempts"] = jsonschema.Schema{Type: jsonschema.Integer, Description: fmt.Sprintf(
			"Optional, 1-%d: how many independent attempts the task gets; the best one whose acceptance commands pass is merged. "+
				"Omit it for the run's default. Ask for 2-3 only on a risky task (a tricky algorithm, a flaky area) "+
				"that has acceptance commands: each attempt costs as much as the task.", MaxAttempts)}
	}
	if o.TaskRisks {
		task.Properties["risks"] = strs("What could go wrong in this task.")
	}
	params := jsonschema.Schema{
		Type: jsonschema.Object,
		Properties: map[string]jsonschema.Schema{
			"title":    str("Short title of the plan."),
			"overview": str("The approach in a few sentences: what exists, what will change, in which order."),
			"tasks": {
				Type:        jsonschema.Array,
				Description: "The tasks, as a dependency graph: independent tasks may run in parallel.",
				Items:       &task,
			},
			"risks": strs("What could go wrong and how the plan handles it."),
		},
		Required: []string{"tasks"},
	}
	if o.Testing {
		params.Properties["testing_strategy"] = str("How the result will be verified.")
	}
	desc := o.Description
	if desc == "" {
		desc = defaultToolDescription
	}
	raw, err := json.Marshal(params)
	if err != nil {
		panic(fmt.Sprintf("planspec: marshal the create_plan schema: %v", err)) // plain values: cannot fail
	}
	return Tool{Name: CreatePlanToolName, Description: desc, Parameters: raw}
}
