package watch

import (
	"slices"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
)

// The report splits out each sub-agent's tokens under its id and goal.
func TestReportSplitsSubagents(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	parentTurns := 0
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		lead := false
		for _, tl := range req.Tools {
			lead = lead || tl.Function.Name == "task"
		}
		if !lead {
			return llmtest.Text("The answer is 42.")
		}
		parentTurns++
		if parentTurns == 1 {
			return llmtest.Calls(llmtest.Call("task", map[string]any{"goal": "Find the answer"}))
		}
		return llmtest.Text("Done with the sub-agent's help.")
	})
	startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv)})
	dropCommand(t, l, command("t1", 1))
	var rep *protocol.Report
	eventually(t, "report t1", func() bool {
		r, err := protocol.ReadReport(l.ReportFile("t1"))
		rep = r
		return err == nil
	})
	if rep.Status != protocol.StatusCompleted {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Subagents) != 1 || rep.Subagents[0].ID != "t1.sub1" || rep.Subagents[0].Goal != "Find the answer" {
		t.Fatalf("report sub-agents %+v", rep.Subagents)
	}
	sub := rep.Subagents[0].Tokens
	if sub.Prompt <= 0 || sub.Prompt >= rep.Tokens.Prompt || sub.Completion <= 0 {
		t.Errorf("sub-agent tokens %+v, want a part of the task's %+v", sub, rep.Tokens)
	}
	if r := srv.Rejections(); len(r) > 0 || !slices.Contains([]int{2}, parentTurns) {
		t.Errorf("rejections %v, lead turns %d", r, parentTurns)
	}
}
