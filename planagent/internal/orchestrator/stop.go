package orchestrator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// limitHit is a budget that was reached: its stop reason, limit and use.
type limitHit struct {
	reason      string
	limit, used float64
	text        string
}

// stopOf is why the run in st ended with status, given the budget that
// bound (if any). Pure: the run's state in, the reason out.
func stopOf(st *runrecord.State, status runrecord.RunStatus, hit limitHit, tasks []taskgraph.Task) *runrecord.Stop {
	switch status {
	case runrecord.RunCompleted:
		return &runrecord.Stop{Reason: runrecord.StopCompleted}
	case runrecord.RunPaused:
		if st.ConfigError != "" {
			// The model server cannot serve the agent as configured.
			return &runrecord.Stop{Reason: runrecord.StopSetupError, Detail: firstLine(st.ConfigError)}
		}
		return &runrecord.Stop{Reason: hit.reason, Limit: hit.limit, Used: hit.used, Detail: hit.text}
	case runrecord.RunInterrupted:
		return &runrecord.Stop{Reason: runrecord.StopInterrupted}
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
		return &runrecord.Stop{Reason: runrecord.StopModelError, Tasks: failed, Detail: firstLine(detail)}
	}
	s := &runrecord.Stop{Reason: runrecord.StopTaskFailed, Tasks: failed}
	if status == runrecord.RunAborted {
		s.Detail = "the decision step aborted the run"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// envErr is err as the fault of the machine it is (a full disk, the engine
// gone) while doing what, or nil when it is not one.
func envErr(what string, err error) error {
	if !envfault.Is(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
