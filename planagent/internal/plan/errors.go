package plan

import (
	"errors"
	"strings"
)

var (
	// ErrInvalidPlan is a plan that breaks the rules: bad JSON, unknown
	// dependencies, a cycle, too many tasks. Planner errors wrap it when the
	// model did not fix its plan within the allowed repairs.
	ErrInvalidPlan = errors.New("invalid plan")
	// ErrNoPlan is a planning conversation that ended without create_plan.
	ErrNoPlan = errors.New("planner made no plan")
)

// ValidationError lists every problem Validate found, each naming the task
// and what is wrong, so the model can fix all of them in one repair.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

// Unwrap makes errors.Is(err, ErrInvalidPlan) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalidPlan }
