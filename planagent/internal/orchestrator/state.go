package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// RunStatus is where a run is.
type RunStatus string

const (
	RunRunning     RunStatus = "running"
	RunCompleted   RunStatus = "completed" // every task completed
	RunFailed      RunStatus = "failed"    // finished with a failed or skipped task
	RunAborted     RunStatus = "aborted"   // the model decided to abort after a failure
	RunInterrupted RunStatus = "interrupted"
)

// Finished reports whether a run needs no resume.
func (s RunStatus) Finished() bool {
	return s == RunCompleted || s == RunFailed || s == RunAborted
}

// TaskInfo is the per-task run record beyond the graph's status.
type TaskInfo struct {
	Attempt      int             `json:"attempt"` // attempt of the command last dispatched
	DispatchedAt time.Time       `json:"dispatched_at,omitzero"`
	Hints        []string        `json:"hints,omitempty"`
	Summary      string          `json:"summary,omitempty"`
	FilesChanged []string        `json:"files_changed,omitempty"`
	Tokens       protocol.Tokens `json:"tokens"`
	Duration     time.Duration   `json:"duration"`
	History      []string        `json:"history,omitempty"` // one line per finished attempt
}

// Decision is what was decided after a failure.
type Decision struct {
	Time   time.Time `json:"time"`
	Task   string    `json:"task"`
	Action string    `json:"action"` // retry | replan | continue | abort
	Reason string    `json:"reason,omitempty"`
	Hints  []string  `json:"hints,omitempty"`
}

// Settings are the options a run was started with that `planagent resume`
// must keep: resuming a `--runtime local --workspace ~/src/app` run under
// the defaults would dispatch its remaining tasks to a container working on
// another directory.
type Settings struct {
	Runtime     string        `json:"runtime,omitempty"`
	Workspace   string        `json:"workspace,omitempty"` // absolute
	Parallel    int           `json:"parallel,omitempty"`
	MaxRetries  int           `json:"max_retries"`
	TaskTimeout time.Duration `json:"task_timeout,omitempty"`
}

// State is a run's durable state, rewritten atomically after every transition.
type State struct {
	RunID     string               `json:"run_id"`
	Goal      string               `json:"goal"`
	Status    RunStatus            `json:"status"`
	Settings  *Settings            `json:"settings,omitempty"` // nil in states written before it existed
	Created   time.Time            `json:"created"`
	Updated   time.Time            `json:"updated"`
	Plan      *plan.Plan           `json:"plan"`
	Tasks     []taskgraph.Task     `json:"tasks"`
	Info      map[string]*TaskInfo `json:"info"`
	Decisions []Decision           `json:"decisions,omitempty"`
	Usage     llm.Usage            `json:"usage"` // planning and decisions
}

// NewState starts the state of a planned run.
func NewState(runID, goal string, p *plan.Plan, usage llm.Usage, now time.Time) (*State, error) {
	g, err := plan.Graph(p)
	if err != nil {
		return nil, err
	}
	st := &State{RunID: runID, Goal: goal, Status: RunRunning, Created: now, Updated: now, Plan: p,
		Tasks: g.Tasks(), Info: map[string]*TaskInfo{}, Usage: usage}
	for _, t := range st.Tasks {
		st.Info[t.ID] = &TaskInfo{}
	}
	return st, nil
}

// NewRunID makes a sortable, unique run id.
func NewRunID(now time.Time) string {
	return fmt.Sprintf("run-%s-%04x", now.UTC().Format("20060102-150405"), now.UnixNano()&0xffff)
}

func statePath(l volume.Layout, runID string) string {
	return filepath.Join(l.Run(runID), "state.json")
}

// Save writes the state atomically.
func (s *State) Save(l volume.Layout, now time.Time) error {
	s.Updated = now
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run state: %w", err)
	}
	if err := os.MkdirAll(l.Run(s.RunID), 0o755); err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	if err := protocol.WriteFileAtomic(statePath(l, s.RunID), b, 0o644); err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	return nil
}

// ErrNoRun means there is no run to show or resume.
var ErrNoRun = errors.New("no run found")

// LoadState reads a run's state. An empty runID means the latest run (the
// latest unfinished one when unfinished is set).
func LoadState(l volume.Layout, runID string, unfinished bool) (*State, error) {
	if runID == "" {
		id, err := latest(l, unfinished)
		if err != nil {
			return nil, err
		}
		runID = id
	}
	if err := protocol.ValidateID(runID); err != nil {
		return nil, fmt.Errorf("run id: %w", err)
	}
	b, err := os.ReadFile(statePath(l, runID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no run %q (see %s)", ErrNoRun, l.Runs(), runID, l.Runs())
	}
	if err != nil {
		return nil, fmt.Errorf("read run state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("run state %s is corrupt: %w", statePath(l, runID), err)
	}
	if st.Info == nil {
		st.Info = map[string]*TaskInfo{}
	}
	for _, t := range st.Tasks {
		if st.Info[t.ID] == nil {
			st.Info[t.ID] = &TaskInfo{}
		}
	}
	return &st, nil
}

func latest(l volume.Layout, unfinished bool) (string, error) {
	entries, err := os.ReadDir(l.Runs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	for _, id := range ids {
		st, err := LoadState(l, id, false)
		if err != nil {
			continue
		}
		if unfinished && st.Status.Finished() {
			continue
		}
		return id, nil
	}
	what := "runs"
	if unfinished {
		what = "unfinished runs"
	}
	return "", fmt.Errorf("%w: no %s under %s (start one with `planagent run GOAL`)", ErrNoRun, what, l.Runs())
}
