package orchestrator

import (
	"reflect"
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

func TestStopOf(t *testing.T) {
	t.Parallel()
	failed := func(id, err string) taskgraph.Task {
		return taskgraph.Task{ID: id, Status: taskgraph.Failed, Error: err}
	}
	done := taskgraph.Task{ID: "ok", Status: taskgraph.Completed}
	budget := limitHit{runrecord.StopBudgetUSD, 2, 2.5, "cost budget reached: $2.5000 of $2.00"}
	for _, tc := range []struct {
		name    string
		status  runrecord.RunStatus
		hit     limitHit
		tasks   []taskgraph.Task
		reasons map[string]string // task → its last report's reason
		config  string            // runrecord.State.ConfigError
		want    runrecord.Stop
	}{
		{name: "completed", status: runrecord.RunCompleted, tasks: []taskgraph.Task{done}, want: runrecord.Stop{Reason: runrecord.StopCompleted}},
		{name: "paused", status: runrecord.RunPaused, hit: budget, want: runrecord.Stop{Reason: runrecord.StopBudgetUSD, Limit: 2, Used: 2.5, Detail: budget.text}},
		{name: "interrupted", status: runrecord.RunInterrupted, want: runrecord.Stop{Reason: runrecord.StopInterrupted}},
		{name: "a server that cannot serve the agent", status: runrecord.RunPaused, config: "the model server returned a tool call as text: start vLLM with --enable-auto-tool-choice",
			want: runrecord.Stop{Reason: runrecord.StopSetupError, Detail: "the model server returned a tool call as text: start vLLM with --enable-auto-tool-choice"}},
		{name: "a task failed", status: runrecord.RunFailed, tasks: []taskgraph.Task{done, failed("b", "tests fail"), failed("a", "x")},
			want: runrecord.Stop{Reason: runrecord.StopTaskFailed, Tasks: []string{"a", "b"}}},
		{name: "aborted", status: runrecord.RunAborted, tasks: []taskgraph.Task{failed("a", "x")},
			want: runrecord.Stop{Reason: runrecord.StopTaskFailed, Tasks: []string{"a"}, Detail: "the decision step aborted the run"}},
		{name: "the model failed every failed task", status: runrecord.RunFailed, tasks: []taskgraph.Task{failed("a", "llm http://x (model m): HTTP 503: overloaded\nmore")},
			reasons: map[string]string{"a": protocol.ReasonModel},
			want:    runrecord.Stop{Reason: runrecord.StopModelError, Tasks: []string{"a"}, Detail: "llm http://x (model m): HTTP 503: overloaded"}},
		{name: "one failed on its own", status: runrecord.RunFailed, tasks: []taskgraph.Task{failed("a", "llm"), failed("b", "tests")},
			reasons: map[string]string{"a": protocol.ReasonModel},
			want:    runrecord.Stop{Reason: runrecord.StopTaskFailed, Tasks: []string{"a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &runrecord.State{Info: map[string]*runrecord.TaskInfo{}, ConfigError: tc.config}
			for id, r := range tc.reasons {
				st.Info[id] = &runrecord.TaskInfo{Reason: r}
			}
			if got := stopOf(st, tc.status, tc.hit, tc.tasks); !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("stopOf = %+v, want %+v", *got, tc.want)
			}
		})
	}
}
