package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// This is the chat-side equivalent of planagent's plan package (Go's
// internal rule keeps codingagent from importing it): the same create_plan
// contract (DESIGN.md: tasks with id, description, dependencies; title,
// overview, risks allowed), plus seed 003's testing strategy and per-step
// risks. Only the pure parts are repeated; planagent's planner loop and
// task graph stay where they are.

// PlanStep is one step of a plan.
type PlanStep struct {
	ID           string   `json:"id"`
	Title        string   `json:"title,omitempty"`
	Description  string   `json:"description"`
	Dependencies []string `json:"dependencies"`
	Risks        []string `json:"risks,omitempty"`
}

// Plan is the create_plan tool's arguments.
type Plan struct {
	Title           string     `json:"title,omitempty"`
	Overview        string     `json:"overview,omitempty"`
	Tasks           []PlanStep `json:"tasks"`
	Risks           []string   `json:"risks,omitempty"`
	TestingStrategy string     `json:"testing_strategy,omitempty"`
}

// ErrInvalidPlan marks create_plan arguments that break the rules.
var ErrInvalidPlan = errors.New("invalid plan")

const maxPlanSteps = 50

var planIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// ParsePlan decodes and validates create_plan arguments. Seed 003 calls the
// list "steps"; that name is accepted as well as the contract's "tasks".
func ParsePlan(args string) (*Plan, error) {
	var raw struct {
		Plan
		Steps []PlanStep `json:"steps"`
	}
	if err := json.Unmarshal([]byte(args), &raw); err != nil {
		return nil, fmt.Errorf(`%w: create_plan arguments are not valid JSON for the schema (%v): pass {"tasks": [{"id", "description", "dependencies"}]}`, ErrInvalidPlan, err)
	}
	p := raw.Plan
	if len(p.Tasks) == 0 {
		p.Tasks = raw.Steps
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks what running the plan relies on: 1 to 50 steps with
// unique well-formed ids, descriptions, known dependencies and no cycle.
func (p *Plan) Validate() error {
	var problems []string
	switch n := len(p.Tasks); {
	case n == 0:
		problems = append(problems, "the plan has no tasks: give at least one")
	case n > maxPlanSteps:
		problems = append(problems, fmt.Sprintf("the plan has %d tasks; the limit is %d: merge small steps", n, maxPlanSteps))
	}
	ids := map[string]bool{}
	for i, s := range p.Tasks {
		switch {
		case !planIDPattern.MatchString(s.ID):
			problems = append(problems, fmt.Sprintf("task %d: id %q must be 1-64 letters, digits, '-', '_' or '.'", i+1, s.ID))
		case ids[s.ID]:
			problems = append(problems, fmt.Sprintf("task id %q is used twice: ids must be unique", s.ID))
		}
		ids[s.ID] = true
		if strings.TrimSpace(s.Description) == "" {
			problems = append(problems, fmt.Sprintf("task %q has an empty description", s.ID))
		}
	}
	for _, s := range p.Tasks {
		for _, d := range s.Dependencies {
			if d == s.ID || !ids[d] {
				problems = append(problems, fmt.Sprintf("task %q depends on %q, which is not another task of the plan", s.ID, d))
			}
		}
	}
	if len(problems) == 0 {
		if _, err := p.Order(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidPlan, strings.Join(problems, "; "))
	}
	return nil
}

// Order returns the steps in an order that respects dependencies, keeping
// the plan's own order among steps that are ready together.
func (p *Plan) Order() ([]PlanStep, error) {
	done := map[string]bool{}
	out := make([]PlanStep, 0, len(p.Tasks))
	for len(out) < len(p.Tasks) {
		progressed := false
		for _, s := range p.Tasks {
			if done[s.ID] || !allDone(s.Dependencies, done) {
				continue
			}
			done[s.ID] = true
			out = append(out, s)
			progressed = true
		}
		if !progressed {
			var stuck []string
			for _, s := range p.Tasks {
				if !done[s.ID] {
					stuck = append(stuck, s.ID)
				}
			}
			return nil, fmt.Errorf("the dependencies of %s form a cycle: remove one of them", strings.Join(stuck, ", "))
		}
	}
	return out, nil
}

func allDone(ids []string, done map[string]bool) bool {
	for _, id := range ids {
		if !done[id] {
			return false
		}
	}
	return true
}

// StepTitle is a step's title, or the first line of its description.
func (s PlanStep) StepTitle() string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return t
	}
	return firstLineOf(s.Description)
}
