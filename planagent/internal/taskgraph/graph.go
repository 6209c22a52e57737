// Package taskgraph is the plan's task DAG and its state machine:
// validation, topological order, the ready set, status
// transitions with skip propagation and retry, replanning and the summary
// given to the LLM. It does no I/O.
//
// A Graph is not safe for concurrent use: the orchestrator owns it from one
// goroutine and persists it (it marshals to JSON) after every change.
package taskgraph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/codeagent/codeagent/internal/planspec"
)

// Status is a task's place in its lifecycle.
type Status string

const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
	Failed     Status = "failed"
	Skipped    Status = "skipped"
)

func (s Status) valid() bool {
	switch s {
	case Pending, InProgress, Completed, Failed, Skipped:
		return true
	}
	return false
}

// Task is one node of the graph with its run state.
type Task struct {
	ID           string   `json:"id"`
	Title        string   `json:"title,omitempty"`
	Description  string   `json:"description"`
	Dependencies []string `json:"dependencies,omitempty"`
	Acceptance   []string `json:"acceptance,omitempty"`
	Status       Status   `json:"status"`
	Result       string   `json:"result,omitempty"`
	// Error is the last failure's text. It survives Retry so the next
	// attempt's context can say what went wrong; Complete clears it.
	Error    string `json:"error,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	// SkippedBy is the failed task that caused the skip, so Retry can restore
	// exactly the tasks it skipped and the summary can name the cause.
	SkippedBy string `json:"skipped_by,omitempty"`
	// BudgetTokens is the task's own token budget (0: the run's).
	BudgetTokens int `json:"budget_tokens,omitempty"`
	// BestOf is how many independent attempts the plan asked for (the
	// plan's "attempts"; 0: the run's setting), the best passing one
	// merged. Not Attempts, which counts the attempts started.
	BestOf int `json:"best_of,omitempty"`
	// Granted is how many of Attempts do not count against the retries:
	// resume --retry-failed gives a failed task its retries anew.
	Granted int `json:"granted,omitempty"`
}

func (t Task) clone() Task {
	t.Dependencies = slices.Clone(t.Dependencies)
	t.Acceptance = slices.Clone(t.Acceptance)
	return t
}

// Graph is a validated task DAG. The zero value is an empty graph.
type Graph struct {
	tasks []Task         // plan order
	index map[string]int // id -> position in tasks
	order []int          // topological, stable by plan order
	pos   []int          // task -> its place in order
	deps  [][]int        // task -> its dependencies' positions in tasks
}

// New validates tasks (non-empty unique ids, known dependencies, no
// self-dependency, no cycle) and builds a graph. Tasks without a status
// start pending; given statuses are kept so a persisted run can be rebuilt.
func New(tasks []Task) (*Graph, error) {
	g := &Graph{tasks: make([]Task, 0, len(tasks)), index: make(map[string]int, len(tasks))}
	for _, t := range tasks {
		t = t.clone()
		if t.ID == "" {
			return nil, fmt.Errorf("task %d (%q): %w", len(g.tasks)+1, firstLine(t.Description), ErrEmptyID)
		}
		if _, dup := g.index[t.ID]; dup {
			return nil, fmt.Errorf("%w: %q is used by more than one task", ErrDuplicateTask, t.ID)
		}
		if t.Status == "" {
			t.Status = Pending
		}
		if !t.Status.valid() {
			return nil, fmt.Errorf("task %q: %w %q (want pending, in_progress, completed, failed or skipped)", t.ID, ErrInvalidStatus, t.Status)
		}
		t.Dependencies = dedupe(t.Dependencies)
		g.index[t.ID] = len(g.tasks)
		g.tasks = append(g.tasks, t)
	}
	for _, t := range g.tasks {
		for _, d := range t.Dependencies {
			if d == t.ID {
				return nil, fmt.Errorf("%w: task %q lists itself as a dependency", ErrSelfDependency, t.ID)
			}
			if _, ok := g.index[d]; !ok {
				return nil, fmt.Errorf("%w: task %q depends on unknown task %q", ErrUnknownDependency, t.ID, d)
			}
		}
	}
	order, err := topoOrder(g.tasks)
	if err != nil {
		return nil, err
	}
	g.order = order
	g.derive()
	return g, nil
}

// derive computes what is kept beside the tasks so that the per-task
// questions (is it ready, where is it in the order) cost O(its
// dependencies), not a map lookup per dependency or a scan of the plan.
func (g *Graph) derive() {
	g.pos = make([]int, len(g.tasks))
	for k, i := range g.order {
		g.pos[i] = k
	}
	g.deps = make([][]int, len(g.tasks))
	for i, t := range g.tasks {
		g.deps[i] = make([]int, len(t.Dependencies))
		for k, d := range t.Dependencies {
			g.deps[i][k] = g.index[d]
		}
	}
}

// topoOrder is planspec's order (stable by plan order), shared with plan
// validation so both name a cycle the same way.
func topoOrder(tasks []Task) ([]int, error) {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return planspec.TopoOrder(ids, func(i int) []string { return tasks[i].Dependencies })
}

// Tasks returns a copy of the tasks in plan order.
func (g *Graph) Tasks() []Task {
	out := make([]Task, len(g.tasks))
	for i, t := range g.tasks {
		out[i] = t.clone()
	}
	return out
}

// Clone returns an independent copy, e.g. to try a change before making it.
func (g *Graph) Clone() *Graph {
	c := &Graph{tasks: g.Tasks(), index: make(map[string]int, len(g.index)), order: slices.Clone(g.order),
		pos: g.pos, deps: g.deps} // pos and deps are never modified in place
	for id, i := range g.index {
		c.index[id] = i
	}
	return c
}

// Get returns a copy of the task with id.
func (g *Graph) Get(id string) (Task, bool) {
	i, ok := g.index[id]
	if !ok {
		return Task{}, false
	}
	return g.tasks[i].clone(), true
}

// Len is the number of tasks.
func (g *Graph) Len() int { return len(g.tasks) }

// Order returns the task ids in topological order (dependencies first),
// ties broken by plan order.
func (g *Graph) Order() []string {
	ids := make([]string, len(g.order))
	for k, i := range g.order {
		ids[k] = g.tasks[i].ID
	}
	return ids
}

// Ready returns the pending tasks whose dependencies are all completed, in
// topological order: the tasks that may be dispatched now.
func (g *Graph) Ready() []string { return g.ReadyN(len(g.tasks)) }

// ReadyN is Ready stopped after n tasks: a dispatcher with n free slots
// needs no more, and a 10 000-task fan-out would otherwise list thousands
// of ready tasks for every one it starts.
func (g *Graph) ReadyN(n int) []string {
	var ids []string
	for _, i := range g.order {
		if len(ids) >= n {
			break
		}
		if g.ready(i) {
			ids = append(ids, g.tasks[i].ID)
		}
	}
	return ids
}

// Position returns id's place (1-based) in the topological order and the
// number of tasks; 0 for an unknown id.
func (g *Graph) Position(id string) (int, int) {
	i, ok := g.index[id]
	if !ok {
		return 0, len(g.tasks)
	}
	return g.pos[i] + 1, len(g.tasks)
}

func (g *Graph) ready(i int) bool {
	if g.tasks[i].Status != Pending {
		return false
	}
	for _, d := range g.deps[i] {
		if g.tasks[d].Status != Completed {
			return false
		}
	}
	return true
}

type graphJSON struct {
	Tasks []Task `json:"tasks"`
}

// MarshalJSON writes {"tasks": [...]} in plan order.
func (g *Graph) MarshalJSON() ([]byte, error) {
	tasks := g.tasks
	if tasks == nil {
		tasks = []Task{}
	}
	return json.Marshal(graphJSON{Tasks: tasks})
}

// UnmarshalJSON rebuilds a graph written by MarshalJSON, validating it as New does.
func (g *Graph) UnmarshalJSON(b []byte) error {
	var v graphJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decode task graph: %w", err)
	}
	ng, err := New(v.Tasks)
	if err != nil {
		return fmt.Errorf("decode task graph: %w", err)
	}
	*g = *ng
	return nil
}

func dedupe(ids []string) []string {
	out := ids[:0:0]
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
