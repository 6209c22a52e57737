package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/protocol"
)

// TodoStatus is where a todo stands; the names are those of planagent's
// task statuses (taskgraph), so both programs speak of progress alike.
type TodoStatus string

const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
	TodoFailed     TodoStatus = "failed"
	TodoSkipped    TodoStatus = "skipped"
)

func parseTodoStatus(s string) (TodoStatus, error) {
	switch st := TodoStatus(s); st {
	case TodoPending, TodoInProgress, TodoCompleted, TodoFailed, TodoSkipped:
		return st, nil
	}
	return "", fmt.Errorf("status %q is not one of pending, in_progress, completed, failed, skipped", s)
}

func (s TodoStatus) mark() string {
	switch s {
	case TodoCompleted:
		return "[x]"
	case TodoInProgress:
		return "[>]"
	case TodoFailed:
		return "[!]"
	case TodoSkipped:
		return "[-]"
	}
	return "[ ]"
}

// Todo is one step of a plan turned into work the person runs.
type Todo struct {
	ID           string     `json:"id"`
	Title        string     `json:"title"`
	Description  string     `json:"description"`
	Dependencies []string   `json:"dependencies"`
	Status       TodoStatus `json:"status"`
	Result       string     `json:"result,omitempty"` // the agent's report when completed
	Error        string     `json:"error,omitempty"`
}

// State is what a chat session keeps beside its conversation.
type State struct {
	Plan  *agent.Plan `json:"plan,omitempty"`
	Todos []Todo      `json:"todos"`
	// PlanMode is the mode the session was left in; --continue keeps it.
	PlanMode bool `json:"plan_mode,omitempty"`
}

func loadState(path string) (State, error) {
	var s State
	b, err := protocol.ReadRegular(path, 0)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read chat state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("chat state %s is corrupt (move it away to start without plan and todos): %w", path, err)
	}
	// A todo left in progress by a crash did not finish: it can run again.
	for i := range s.Todos {
		if s.Todos[i].Status == TodoInProgress {
			s.Todos[i].Status = TodoPending
		}
	}
	return s, nil
}

// save writes s through a temp file and a rename: a crash leaves the old
// state or the new one, never half of it.
func (s *State) save(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode chat state: %w", err)
	}
	return writeAtomic(path, append(b, '\n'))
}

// writeAtomic replaces path so a reader never sees half a file.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return protocol.WriteFileAtomic(path, data, 0o644)
}

// todosFromPlan turns the plan's steps into pending todos, in dependency order.
func todosFromPlan(p *agent.Plan) []Todo {
	steps, err := planspec.Order(p)
	if err != nil {
		steps = p.Tasks
	}
	out := make([]Todo, len(steps))
	for i, s := range steps {
		out[i] = Todo{ID: s.ID, Title: agent.StepTitle(s), Description: s.Description,
			Dependencies: append([]string{}, s.Dependencies...), Status: TodoPending}
	}
	return out
}

func (s *State) index(id string) int {
	for i, t := range s.Todos {
		if t.ID == id {
			return i
		}
	}
	return -1
}

// unmet lists the dependencies of todo i that are not completed, each with
// its status ("x (failed)").
func (s *State) unmet(i int) []string {
	var out []string
	for _, d := range s.Todos[i].Dependencies {
		j := s.index(d)
		switch {
		case j < 0:
			out = append(out, d+" (not a todo)")
		case s.Todos[j].Status != TodoCompleted:
			out = append(out, fmt.Sprintf("%s (%s)", d, s.Todos[j].Status))
		}
	}
	return out
}

// nextReady is the first pending todo whose dependencies are all completed,
// read from the state as it is now; -1 when none.
func (s *State) nextReady() int {
	for i, t := range s.Todos {
		if t.Status == TodoPending && len(s.unmet(i)) == 0 {
			return i
		}
	}
	return -1
}

func (s *State) count(st TodoStatus) int {
	n := 0
	for _, t := range s.Todos {
		if t.Status == st {
			n++
		}
	}
	return n
}

// renderPlan is /plan show.
func renderPlan(p *agent.Plan) string {
	var b strings.Builder
	title := strings.TrimSpace(p.Title)
	if title == "" {
		title = "(untitled plan)"
	}
	fmt.Fprintf(&b, "Plan: %s\n", title)
	if o := strings.TrimSpace(p.Overview); o != "" {
		b.WriteString("\n" + o + "\n")
	}
	b.WriteString("\nSteps:\n")
	for i, s := range p.Tasks {
		fmt.Fprintf(&b, "  %d. %s — %s\n", i+1, s.ID, agent.StepTitle(s))
		if d := strings.TrimSpace(s.Description); d != "" && d != agent.StepTitle(s) {
			fmt.Fprintf(&b, "     %s\n", strings.ReplaceAll(d, "\n", "\n     "))
		}
		if len(s.Dependencies) > 0 {
			fmt.Fprintf(&b, "     after: %s\n", strings.Join(s.Dependencies, ", "))
		}
		for _, r := range s.Risks {
			fmt.Fprintf(&b, "     risk: %s\n", r)
		}
	}
	if len(p.Risks) > 0 {
		b.WriteString("\nRisks:\n")
		for _, r := range p.Risks {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	if t := strings.TrimSpace(p.TestingStrategy); t != "" {
		b.WriteString("\nTesting strategy: " + t + "\n")
	}
	return b.String()
}
