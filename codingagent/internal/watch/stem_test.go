package watch

import (
	"os"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
)

// Two attempts of one task in flight at once: each command file is named
// by its attempt's stem, and each report and events file lands under the
// stem of the command claimed, not under the task's id alone.
func TestAttemptStemsKeepTheirOwnFiles(t *testing.T) {
	l := newLayout(t)
	srv := llmtest.New(t)
	model := newScriptedModel()
	srv.Handle(model.handle)
	startWatcher(t, Options{Layout: l, Runner: agentRunner(t, l, srv), Concurrency: 2})
	eventually(t, "heartbeat", func() bool { return len(mustHeartbeats(t, l)) == 1 })
	for n := 1; n <= 2; n++ {
		// Attempts side by side each work in their own copy (the run
		// has checkpoints), which also keeps their conversations apart.
		c := command("t1", n)
		c.Workspace = l.AttemptRel("r1", "t1", n)
		if err := os.MkdirAll(l.Attempt("r1", "t1", n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := protocol.WriteCommand(l.CommandFile(protocol.Stem("t1", n)), c); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 2; n++ {
		stem := protocol.Stem("t1", n)
		rep := waitReport(t, l, stem, n)
		if rep.ID != "t1" || rep.Status != protocol.StatusCompleted {
			t.Errorf("report %s: id %q status %s error %q", stem, rep.ID, rep.Status, rep.Error)
		}
		if !exists(l.EventsFile(stem)) {
			t.Errorf("no events file %s", l.EventsFile(stem))
		}
		eventually(t, "claim of "+stem+" released", func() bool { return !exists(l.ClaimFile(stem)) })
	}
	if exists(l.ReportFile("t1")) || exists(l.EventsFile("t1")) {
		t.Errorf("a report or events file under the bare task id: the stems must keep them apart")
	}
	if n := model.starts("t1"); n != 2 {
		t.Errorf("task t1 started %d times, want 2 (one per attempt)", n)
	}
}
