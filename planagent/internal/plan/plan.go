// Package plan turns a goal into a validated plan: the create_plan tool
// schema, parsing and validation of its arguments (pure), conversion to a
// task graph, and the Planner that runs the LLM over the workspace with
// read-only tools until it calls create_plan with a valid plan.
package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Task is one step of the plan as the model writes it.
type Task struct {
	ID           string   `json:"id"`
	Title        string   `json:"title,omitempty"`
	Description  string   `json:"description"`
	Dependencies []string `json:"dependencies"`
	// Acceptance holds shell commands run in the workspace; exit 0 = accepted.
	Acceptance []string `json:"acceptance,omitempty"`
}

// Plan is the create_plan tool's arguments.
type Plan struct {
	Title    string   `json:"title"`
	Overview string   `json:"overview"`
	Tasks    []Task   `json:"tasks"`
	Risks    []string `json:"risks,omitempty"`
}

// Limits bound a plan. Zero fields take the defaults.
type Limits struct {
	MaxTasks       int // default 50
	MaxDescription int // characters per task description, default 4000
	MaxTitle       int // characters per title, default 200
	MaxAcceptance  int // acceptance commands per task, default 10
}

// The limits used where none are configured.
const (
	DefaultMaxTasks       = 50
	DefaultMaxDescription = 4000
	DefaultMaxTitle       = 200
	DefaultMaxAcceptance  = 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxTasks <= 0 {
		l.MaxTasks = DefaultMaxTasks
	}
	if l.MaxDescription <= 0 {
		l.MaxDescription = DefaultMaxDescription
	}
	if l.MaxTitle <= 0 {
		l.MaxTitle = DefaultMaxTitle
	}
	if l.MaxAcceptance <= 0 {
		l.MaxAcceptance = DefaultMaxAcceptance
	}
	return l
}

// maxProblems keeps a rejection readable when a plan is wrong everywhere.
const maxProblems = 10

// Parse decodes create_plan arguments. Unknown fields are ignored because
// models add them freely; wrong types are reported with the field's path.
func Parse(args string) (*Plan, error) {
	if strings.TrimSpace(args) == "" {
		return nil, fmt.Errorf(`%w: create_plan arguments are empty: pass {"tasks": [{"id", "description", "dependencies"}]}`, ErrInvalidPlan)
	}
	var p Plan
	if err := json.Unmarshal([]byte(args), &p); err != nil {
		return nil, fmt.Errorf("%w: create_plan arguments are not valid JSON for the schema: %s", ErrInvalidPlan, jsonProblem(err))
	}
	return &p, nil
}

func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %q must be %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

// Validate checks p against the rules the orchestrator relies on: 1 to
// MaxTasks tasks, valid unique ids (protocol.ValidateID, since ids become
// file names), non-empty bounded descriptions, known dependencies and no
// cycle. The error is a *ValidationError naming every problem found.
func Validate(p *Plan, limits Limits) error {
	if p == nil {
		return &ValidationError{Problems: []string{"no plan given"}}
	}
	l := limits.withDefaults()
	v := &validator{}
	switch n := len(p.Tasks); {
	case n == 0:
		v.add("the plan has no tasks: give at least one task")
	case n > l.MaxTasks:
		v.add(fmt.Sprintf("the plan has %d tasks; the limit is %d: merge small steps into larger ones", n, l.MaxTasks))
	}
	if n := utf8.RuneCountInString(p.Title); n > l.MaxTitle {
		v.add(fmt.Sprintf("the plan title is %d characters; the limit is %d", n, l.MaxTitle))
	}
	ids := map[string]bool{}
	for i, t := range p.Tasks {
		if err := protocol.ValidateID(t.ID); err != nil {
			v.add(fmt.Sprintf("task %d: %v", i+1, err))
		} else if ids[t.ID] {
			v.add(fmt.Sprintf("task id %q is used by more than one task: ids must be unique", t.ID))
		}
		ids[t.ID] = true
		v.task(t, l)
	}
	for _, t := range p.Tasks {
		for _, d := range t.Dependencies {
			switch {
			case d == t.ID:
				v.add(fmt.Sprintf("task %q depends on itself", t.ID))
			case !ids[d]:
				v.add(fmt.Sprintf("task %q depends on unknown task %q", t.ID, d))
			}
		}
	}
	if len(v.problems) == 0 {
		// Only a structurally sound plan can have a meaningful cycle; the
		// graph names it.
		if _, err := taskgraph.New(p.graphTasks()); err != nil {
			if errors.Is(err, taskgraph.ErrCycle) {
				v.add(err.Error() + ": remove one of these dependencies")
			} else {
				v.add(err.Error())
			}
		}
	}
	return v.err()
}

type validator struct {
	problems []string
	dropped  int
}

func (v *validator) add(problem string) {
	if len(v.problems) == maxProblems {
		v.dropped++
		return
	}
	v.problems = append(v.problems, problem)
}

func (v *validator) task(t Task, l Limits) {
	name := fmt.Sprintf("task %q", t.ID)
	// reports/summary.md is the run summary: a task of that id would overwrite it.
	if t.ID == "summary" {
		v.add(`task id "summary" is reserved (reports/summary.md is the run summary): choose another id`)
	}
	switch n := utf8.RuneCountInString(t.Description); {
	case strings.TrimSpace(t.Description) == "":
		v.add(name + " has an empty description: say what to change and how to check it")
	case n > l.MaxDescription:
		v.add(fmt.Sprintf("%s description is %d characters; the limit is %d: split the task or shorten it", name, n, l.MaxDescription))
	}
	if n := utf8.RuneCountInString(t.Title); n > l.MaxTitle {
		v.add(fmt.Sprintf("%s title is %d characters; the limit is %d", name, n, l.MaxTitle))
	}
	if n := len(t.Acceptance); n > l.MaxAcceptance {
		v.add(fmt.Sprintf("%s has %d acceptance commands; the limit is %d", name, n, l.MaxAcceptance))
	}
	for i, c := range t.Acceptance {
		if strings.TrimSpace(c) == "" {
			v.add(fmt.Sprintf("%s acceptance command %d is empty", name, i+1))
		}
	}
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	if v.dropped > 0 {
		v.problems = append(v.problems, fmt.Sprintf("and %d more problems", v.dropped))
	}
	return &ValidationError{Problems: v.problems}
}

// Graph builds the task graph of the plan (all tasks pending).
func (p *Plan) Graph() (*taskgraph.Graph, error) {
	g, err := taskgraph.New(p.graphTasks())
	if err != nil {
		return nil, fmt.Errorf("build task graph of plan %q: %w", p.Title, err)
	}
	return g, nil
}

func (p *Plan) graphTasks() []taskgraph.Task {
	tasks := make([]taskgraph.Task, len(p.Tasks))
	for i, t := range p.Tasks {
		tasks[i] = taskgraph.Task{
			ID: t.ID, Title: t.Title, Description: t.Description,
			Dependencies: t.Dependencies, Acceptance: t.Acceptance,
		}
	}
	return tasks
}
