package planspec

import (
	"errors"
	"strings"
)

var (
	// ErrInvalidPlan is a plan that breaks the rules: bad JSON, unknown
	// dependencies, a cycle, too many tasks.
	ErrInvalidPlan = errors.New("invalid plan")
	// ErrCycle is a set of tasks that depend on each other in a loop; the
	// wrapping error names the loop ("a -> b -> a").
	ErrCycle = errors.New("dependency cycle")
)

// ValidationError lists every problem Validate found, each naming the task
// and what is wrong, so the model can fix all of them in one repair.
type ValidationError struct {
	Problems []string
	// Tasks holds, for each problem, the index in Plan.Tasks of the task it
	// is about, or -1 for the plan as a whole (so a plan file can point at
	// the task's line).
	Tasks []int
	// Cycle is, when a problem is a dependency cycle, the indices in
	// Plan.Tasks of the tasks around it (the first repeated at the end),
	// so a plan file can name the lines of all of them.
	Cycle []int
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

// Unwrap makes errors.Is(err, ErrInvalidPlan) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalidPlan }

// Problem is a Parse or Validate error's text without the "invalid plan: "
// prefix that only some of them carry, so a rejection message can frame it
// the same way whichever step failed.
func Problem(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidPlan.Error()+": ")
}

// CycleError is a dependency loop: Path holds the indices into IDs around
// it, the first repeated at the end. It wraps ErrCycle.
type CycleError struct {
	IDs  []string
	Path []int
}

func (e *CycleError) Error() string {
	names := make([]string, len(e.Path))
	for k, i := range e.Path {
		names[k] = e.IDs[i]
	}
	return ErrCycle.Error() + ": " + strings.Join(names, " -> ")
}

func (e *CycleError) Unwrap() error { return ErrCycle }
