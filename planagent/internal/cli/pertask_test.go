package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/runview"
)

// run_end's per_task lines carry each task's sub-agents with their cost.
func TestPerTaskSubagents(t *testing.T) {
	cost := 0.125
	view := &runview.Run{Tasks: []runview.Task{
		{ID: "a", Status: "completed", Subagents: []runview.Subagent{{ID: "a.sub1", Attempt: 1, Goal: "look", CostUSD: &cost}}},
		{ID: "b", Status: "completed"},
	}}
	raw, err := json.Marshal(perTask(view))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"subagents":[{"id":"a.sub1","attempt":1,"goal":"look","tokens":{"prompt":0,"completion":0,"total":0},"cost_usd":0.125}]`) {
		t.Errorf("per_task lacks task a's sub-agent: %s", raw)
	}
	if strings.Count(string(raw), "subagents") != 1 {
		t.Errorf("a task without sub-agents has a subagents entry: %s", raw)
	}
}
