package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// After Ctrl-C (the run's state says "interrupted", its running task stays
// in progress for resume), status, status --json and graph in every format
// show that task interrupted, not running; the state file is not changed.
func TestStatusOfAStoppedRunShowsNothingRunning(t *testing.T) {
	t.Parallel()
	vol, ws, _, st := checkpointedRun(t, false)
	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	stopAt := time.Now()
	st.Tasks[1].Status, st.Tasks[1].Attempts = taskgraph.InProgress, 1
	st.Info["b"].Commit, st.Info["b"].Checkpoint, st.Info["b"].Merge = "", "", 0
	st.Info["b"].Spans = []runrecord.Span{{Attempt: 1, Start: stopAt.Add(-time.Minute)}}
	st.Status = runrecord.RunInterrupted
	if err := st.Save(l, stopAt); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runPlanagent(t, vol, ws, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		return out
	}
	out := run("status")
	if !strings.Contains(out, "[~] b: Step b (interrupted)") || strings.Contains(out, "[>]") {
		t.Errorf("status:\n%s", out)
	}
	var v runview.Run
	if err := json.Unmarshal([]byte(run("status", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if b := v.Tasks[1]; b.Status != "interrupted" || v.Counts["in_progress"] != 0 || b.Timeline[0].End == nil {
		t.Errorf("status --json: task b %+v, counts %v", b, v.Counts)
	}
	for _, format := range []string{"mermaid", "dot"} {
		if out := run("graph", "--format", format); strings.Contains(out, "in progress") || !strings.Contains(out, "interrupted") {
			t.Errorf("graph --format %s:\n%s", format, out)
		}
	}
	var g runview.Graph
	if err := json.Unmarshal([]byte(run("graph", "--format", "json")), &g); err != nil {
		t.Fatal(err)
	}
	if g.Nodes[1].Status != "interrupted" {
		t.Errorf("graph --format json: %+v", g.Nodes)
	}
	back, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.Tasks[1].Status != taskgraph.InProgress || back.Status != runrecord.RunInterrupted {
		t.Errorf("the record resume reads changed: task %s, run %s", back.Tasks[1].Status, back.Status)
	}
}
