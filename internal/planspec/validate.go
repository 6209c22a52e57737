package planspec

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Limits bound a plan. Zero fields take the defaults.
type Limits struct {
	MaxTasks       int // default 50
	MaxDescription int // characters per task description, default 4000
	MaxTitle       int // characters per title, default 200
	MaxAcceptance  int // acceptance commands per task, default 10
	// Reserved maps task ids the caller cannot accept to the reason, which
	// the problem text quotes so the model knows why.
	Reserved map[string]string
}

// The limits used where none are configured.
const (
	DefaultMaxTasks       = 50
	DefaultMaxDescription = 4000
	DefaultMaxTitle       = 200
	DefaultMaxAcceptance  = 10
	// MaxAttempts bounds a task's attempts (best-of-N): each costs as much
	// as the task, and past a handful a further one rarely finds a better
	// result.
	MaxAttempts = 8
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

// Validate checks p against the rules running it relies on: 1 to MaxTasks
// tasks, valid unique ids (protocol.ValidateID, since ids become file
// names) that are not reserved, non-empty bounded descriptions, known
// dependencies and no cycle. The error is a *ValidationError naming every
// problem found.
func Validate(p *Plan, limits Limits) error {
	if p == nil {
		return &ValidationError{Problems: []string{"no plan given"}, Tasks: []int{-1}}
	}
	l := limits.withDefaults()
	v := &validator{}
	switch n := len(p.Tasks); {
	case n == 0:
		v.add(-1, "the plan has no tasks: give at least one task")
	case n > l.MaxTasks:
		v.add(-1, fmt.Sprintf("the plan has %d tasks; the limit is %d: merge small steps into larger ones", n, l.MaxTasks))
	}
	if n := utf8.RuneCountInString(p.Title); n > l.MaxTitle {
		v.add(-1, fmt.Sprintf("the plan title is %d characters; the limit is %d", n, l.MaxTitle))
	}
	ids := map[string]bool{}
	for i, t := range p.Tasks {
		if err := protocol.ValidateID(t.ID); err != nil {
			v.add(i, fmt.Sprintf("task %d: %v", i+1, err))
		} else if ids[t.ID] {
			v.add(i, fmt.Sprintf("task id %q is used by more than one task: ids must be unique", t.ID))
		}
		ids[t.ID] = true
		v.task(i, t, l)
	}
	for i, t := range p.Tasks {
		for _, d := range t.Dependencies {
			switch {
			case d == t.ID:
				v.add(i, fmt.Sprintf("task %q depends on itself", t.ID))
			case !ids[d]:
				v.add(i, fmt.Sprintf("task %q depends on unknown task %q", t.ID, d))
			}
		}
	}
	v.cycle(p)
	return v.err()
}

// cycle reports a dependency loop along with the plan's other problems
// (so a plan file needs no second run to learn of it): over the
// dependencies that name another known task, when the ids are unique.
func (v *validator) cycle(p *Plan) {
	ids := make([]string, len(p.Tasks))
	known := make(map[string]bool, len(p.Tasks))
	for i, t := range p.Tasks {
		if known[t.ID] {
			return // a duplicate id makes the graph ambiguous; that is reported already
		}
		ids[i], known[t.ID] = t.ID, true
	}
	_, err := TopoOrder(ids, func(i int) []string {
		var deps []string
		for _, d := range p.Tasks[i].Dependencies {
			if d != ids[i] && known[d] {
				deps = append(deps, d)
			}
		}
		return deps
	})
	var ce *CycleError
	if errors.As(err, &ce) {
		if len(v.problems) < maxProblems {
			v.cycleAt = ce.Path
		}
		v.add(ce.Path[0], ce.Error()+": remove one of these dependencies")
	}
}

type validator struct {
	problems []string
	tasks    []int
	dropped  int
	cycleAt  []int // the tasks of the cycle reported, if any
}

// add records a problem about the task at index task (-1: the plan).
func (v *validator) add(task int, problem string) {
	if len(v.problems) == maxProblems {
		v.dropped++
		return
	}
	v.problems = append(v.problems, problem)
	v.tasks = append(v.tasks, task)
}

func (v *validator) task(i int, t Task, l Limits) {
	name := fmt.Sprintf("task %q", t.ID)
	if why, ok := l.Reserved[t.ID]; ok {
		v.add(i, fmt.Sprintf("task id %q is reserved (%s): choose another id", t.ID, why))
	}
	switch n := utf8.RuneCountInString(t.Description); {
	case strings.TrimSpace(t.Description) == "":
		v.add(i, name+" has an empty description: say what to change and how to check it")
	case n > l.MaxDescription:
		v.add(i, fmt.Sprintf("%s description is %d characters; the limit is %d: split the task or shorten it", name, n, l.MaxDescription))
	}
	if n := utf8.RuneCountInString(t.Title); n > l.MaxTitle {
		v.add(i, fmt.Sprintf("%s title is %d characters; the limit is %d", name, n, l.MaxTitle))
	}
	for _, b := range []struct {
		key string
		n   int
	}{{"budget_tokens", t.BudgetTokens}, {"task_budget_tokens", t.TaskBudgetTokens}} {
		if b.n < 0 {
			v.add(i, fmt.Sprintf("%s %s is %d: want 0 (the run's task_budget_tokens) or more", name, b.key, b.n))
		}
	}
	if t.BudgetTokens != 0 && t.TaskBudgetTokens != 0 && t.BudgetTokens != t.TaskBudgetTokens {
		v.add(i, fmt.Sprintf("%s has budget_tokens %d and task_budget_tokens %d: both name the task's token budget; give one",
			name, t.BudgetTokens, t.TaskBudgetTokens))
	}
	if t.Attempts < 0 || t.Attempts > MaxAttempts {
		v.add(i, fmt.Sprintf("%s attempts is %d: want 1 to %d (or omit it for the run's attempts setting)", name, t.Attempts, MaxAttempts))
	}
	if n := len(t.Acceptance); n > l.MaxAcceptance {
		v.add(i, fmt.Sprintf("%s has %d acceptance commands; the limit is %d", name, n, l.MaxAcceptance))
	}
	for k, c := range t.Acceptance {
		if strings.TrimSpace(c) == "" {
			v.add(i, fmt.Sprintf("%s acceptance command %d is empty", name, k+1))
		}
	}
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	if v.dropped > 0 {
		v.problems = append(v.problems, fmt.Sprintf("and %d more problems", v.dropped))
		v.tasks = append(v.tasks, -1)
	}
	return &ValidationError{Problems: v.problems, Tasks: v.tasks, Cycle: v.cycleAt}
}
