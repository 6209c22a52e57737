package taskgraph

import (
	"fmt"
	"slices"
)

func (g *Graph) lookup(id string) (int, error) {
	i, ok := g.index[id]
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownTask, id)
	}
	return i, nil
}

func illegal(t Task, to Status, want string) error {
	return fmt.Errorf("%w: task %q is %s, %s to become %s", ErrIllegalTransition, t.ID, t.Status, want, to)
}

// Start moves a ready task (pending, dependencies completed) to in_progress
// and counts the attempt.
func (g *Graph) Start(id string) error {
	i, err := g.lookup(id)
	if err != nil {
		return err
	}
	t := &g.tasks[i]
	if t.Status != Pending {
		return illegal(*t, InProgress, "it must be pending")
	}
	if !g.ready(i) {
		return fmt.Errorf("%w: task %q waits for %v", ErrNotReady, id, g.unfinishedDeps(i))
	}
	t.Status = InProgress
	t.Attempts++
	return nil
}

func (g *Graph) unfinishedDeps(i int) []string {
	var ids []string
	for _, d := range g.tasks[i].Dependencies {
		if g.tasks[g.index[d]].Status != Completed { // only for the error text
			ids = append(ids, d)
		}
	}
	return ids
}

// Complete records the result of an in-progress task.
func (g *Graph) Complete(id, result string) error {
	i, err := g.lookup(id)
	if err != nil {
		return err
	}
	t := &g.tasks[i]
	if t.Status != InProgress {
		return illegal(*t, Completed, "it must be in_progress")
	}
	t.Status = Completed
	t.Result = result
	t.Error = ""
	return nil
}

// Fail records the failure of an in-progress task, or of a pending one that
// could not even be dispatched, and skips every pending task downstream of
// it. Tasks already skipped by another failure keep that cause.
func (g *Graph) Fail(id, errText string) error {
	i, err := g.lookup(id)
	if err != nil {
		return err
	}
	t := &g.tasks[i]
	if t.Status != InProgress && t.Status != Pending {
		return illegal(*t, Failed, "it must be in_progress or pending")
	}
	t.Status = Failed
	t.Error = errText
	for _, j := range g.downstream(i) {
		if d := &g.tasks[j]; d.Status == Pending {
			d.Status = Skipped
			d.SkippedBy = id
		}
	}
	return nil
}

// Retry puts a failed task back to pending together with the tasks skipped
// because of it. A restored task that still depends, directly or through a
// skipped task, on another failed task stays skipped, now naming that cause.
func (g *Graph) Retry(id string) error {
	i, err := g.lookup(id)
	if err != nil {
		return err
	}
	t := &g.tasks[i]
	if t.Status != Failed {
		return illegal(*t, Pending, "only a failed task may be retried")
	}
	t.Status = Pending
	// g.order is topological, so each task's dependencies are settled
	// before the task itself is looked at.
	for _, j := range g.order {
		d := &g.tasks[j]
		if d.Status != Skipped || d.SkippedBy != id {
			continue
		}
		d.Status, d.SkippedBy = Pending, ""
		for _, dep := range d.Dependencies {
			switch up := g.tasks[g.index[dep]]; up.Status {
			case Failed:
				d.Status, d.SkippedBy = Skipped, up.ID
			case Skipped:
				d.Status, d.SkippedBy = Skipped, up.SkippedBy
			}
			if d.Status == Skipped {
				break
			}
		}
	}
	return nil
}

// downstream returns the tasks that depend on task i directly or
// transitively, in topological order.
func (g *Graph) downstream(i int) []int {
	affected := make([]bool, len(g.tasks))
	affected[i] = true
	var out []int
	for _, j := range g.order {
		if j == i {
			continue
		}
		if slices.ContainsFunc(g.deps[j], func(d int) bool { return affected[d] }) {
			affected[j] = true
			out = append(out, j)
		}
	}
	return out
}

// Replace is a replan: every task that is not completed or in progress is
// dropped and remaining (new tasks, as plan.GraphTask makes them) is
// appended as fresh pending tasks (their planned fields only). In-progress tasks
// are kept because a coding agent is still working on them and its report
// will arrive. New tasks may depend on kept tasks and on each other, and
// must not reuse a kept task's id. On error the graph is unchanged.
func (g *Graph) Replace(remaining []Task) error {
	var next []Task
	kept := map[string]Status{}
	for _, t := range g.tasks {
		if t.Status == Completed || t.Status == InProgress {
			next = append(next, t)
			kept[t.ID] = t.Status
		}
	}
	for _, t := range remaining {
		if st, ok := kept[t.ID]; ok {
			return fmt.Errorf("replan: %w: %q is already %s and cannot be replaced; give the new task another id", ErrDuplicateTask, t.ID, st)
		}
		next = append(next, Task{
			ID: t.ID, Title: t.Title, Description: t.Description,
			Dependencies: t.Dependencies, Acceptance: t.Acceptance, Status: Pending,
			BudgetTokens: t.BudgetTokens, BestOf: t.BestOf,
		})
	}
	ng, err := New(next)
	if err != nil {
		return fmt.Errorf("replan: %w", err)
	}
	*g = *ng
	return nil
}

// Refund takes the task's last attempt off its retries (as resume
// --retry-failed does for all of them): a fault of the machine ended it,
// not the task.
func (g *Graph) Refund(id string) error {
	i, err := g.lookup(id)
	if err != nil {
		return err
	}
	if t := &g.tasks[i]; t.Granted < t.Attempts {
		t.Granted++
	}
	return nil
}

// StartAnother counts one more attempt of an in-progress task whose
// attempts run side by side (a task of several attempts): it stays
// in_progress while any of them is under way.
func (g *Graph) StartAnother(id string) error {
	i, err := g.lookup(id)
	if err != nil {
		return err
	}
	t := &g.tasks[i]
	if t.Status != InProgress {
		return illegal(*t, InProgress, "it must be in_progress")
	}
	t.Attempts++
	return nil
}
