package orchestrator

import (
	"reflect"
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

func TestStopOf(t *testing.T) {
	failed := func(id, err string) taskgraph.Task {
		return taskgraph.Task{ID: id, Status: taskgraph.Failed, Error: err}
	}
	done := taskgraph.Task{ID: "ok", Status: taskgraph.Completed}
	budget := limitHit{StopBudgetUSD, 2, 2.5, "cost budget reached: $2.5000 of $2.00"}
	for _, tc := range []struct {
		name    string
		status  RunStatus
		hit     limitHit
		tasks   []taskgraph.Task
		reasons map[string]string // task → its last report's reason
		config  string            // State.ConfigError
		want    Stop
	}{
		{name: "completed", status: RunCompleted, tasks: []taskgraph.Task{done}, want: Stop{Reason: StopCompleted}},
		{name: "paused", status: RunPaused, hit: budget, want: Stop{Reason: StopBudgetUSD, Limit: 2, Used: 2.5, Detail: budget.text}},
		{name: "interrupted", status: RunInterrupted, want: Stop{Reason: StopInterrupted}},
		{name: "a server that cannot serve the agent", status: RunPaused, config: "the model server returned a tool call as text: start vLLM with --enable-auto-tool-choice",
			want: Stop{Reason: StopSetupError, Detail: "the model server returned a tool call as text: start vLLM with --enable-auto-tool-choice"}},
		{name: "a task failed", status: RunFailed, tasks: []taskgraph.Task{done, failed("b", "tests fail"), failed("a", "x")},
			want: Stop{Reason: StopTaskFailed, Tasks: []string{"a", "b"}}},
		{name: "aborted", status: RunAborted, tasks: []taskgraph.Task{failed("a", "x")},
			want: Stop{Reason: StopTaskFailed, Tasks: []string{"a"}, Detail: "the decision step aborted the run"}},
		{name: "the model failed every failed task", status: RunFailed, tasks: []taskgraph.Task{failed("a", "llm http://x (model m): HTTP 503: overloaded\nmore")},
			reasons: map[string]string{"a": protocol.ReasonModel},
			want:    Stop{Reason: StopModelError, Tasks: []string{"a"}, Detail: "llm http://x (model m): HTTP 503: overloaded"}},
		{name: "one failed on its own", status: RunFailed, tasks: []taskgraph.Task{failed("a", "llm"), failed("b", "tests")},
			reasons: map[string]string{"a": protocol.ReasonModel},
			want:    Stop{Reason: StopTaskFailed, Tasks: []string{"a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{Info: map[string]*TaskInfo{}, ConfigError: tc.config}
			for id, r := range tc.reasons {
				st.Info[id] = &TaskInfo{Reason: r}
			}
			if got := stopOf(st, tc.status, tc.hit, tc.tasks); !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("stopOf = %+v, want %+v", *got, tc.want)
			}
		})
	}
}
