package orchestrator

import (
	"sort"
	"strings"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Stop reasons: why a run ended, for scripts (run_end, status --json,
// runs --json, summary.md). Each maps to one exit code (README).
const (
	StopCompleted   = "completed"     // every task completed: exit 0
	StopTaskFailed  = "task_failed"   // a task failed after its retries (or the decider aborted): exit 1
	StopBudgetTok   = "budget_tokens" // the run's token budget: exit 3
	StopBudgetUSD   = "budget_usd"    // the run's cost budget: exit 3
	StopBudgetTime  = "budget_time"   // the run's time budget: exit 3
	StopInterrupted = "interrupted"   // Ctrl-C, SIGTERM: exit 130
	StopModelError  = "model_error"   // the failed tasks failed on the provider's error after retries: exit 1
	StopSetupError  = "setup_error"   // the run could not start or go on (engine, image, workspace): exit 2
)

// Stop is why a run ended. Tasks are the tasks that failed (task_failed,
// model_error); Limit and Used the budget that bound (in tokens, seconds
// or USD); Detail a line for people (the budget's message, the provider's
// error).
type Stop struct {
	Reason string   `json:"reason"`
	Tasks  []string `json:"tasks,omitempty"`
	Limit  float64  `json:"limit,omitempty"`
	Used   float64  `json:"used,omitempty"`
	Detail string   `json:"detail,omitempty"`
}

// limitHit is a budget that was reached: its stop reason, limit and use.
type limitHit struct {
	reason      string
	limit, used float64
	text        string
}

// stopOf is why the run in st ended with status, given the budget that
// bound (if any). Pure: the run's state in, the reason out.
func stopOf(st *State, status RunStatus, hit limitHit, tasks []taskgraph.Task) *Stop {
	switch status {
	case RunCompleted:
		return &Stop{Reason: StopCompleted}
	case RunPaused:
		if st.ConfigError != "" {
			// The model server cannot serve the agent as configured.
			return &Stop{Reason: StopSetupError, Detail: firstLine(st.ConfigError)}
		}
		return &Stop{Reason: hit.reason, Limit: hit.limit, Used: hit.used, Detail: hit.text}
	case RunInterrupted:
		return &Stop{Reason: StopInterrupted}
	}
	var failed []string
	model, detail := true, ""
	for _, t := range tasks {
		if t.Status != taskgraph.Failed {
			continue
		}
		failed = append(failed, t.ID)
		if in := st.Info[t.ID]; in == nil || in.Reason != protocol.ReasonModel {
			model = false
		} else if detail == "" {
			detail = t.Error
		}
	}
	sort.Strings(failed)
	if len(failed) > 0 && model {
		return &Stop{Reason: StopModelError, Tasks: failed, Detail: firstLine(detail)}
	}
	s := &Stop{Reason: StopTaskFailed, Tasks: failed}
	if status == RunAborted {
		s.Detail = "the decision step aborted the run"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
