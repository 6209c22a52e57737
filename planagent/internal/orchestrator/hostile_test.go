package orchestrator

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The agent can make a FIFO in reports/ from inside its container. Opening
// one blocks until a writer appears, deaf to signals; planagent must
// refuse it at once, fail the task and go on (in a run and in a resume).
func TestDriveRefusesAFIFOReport(t *testing.T) {
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.ID == "t000" {
			_ = syscall.Mkfifo(l.EventsFile(c.ID), 0o644)
			_ = syscall.Mkfifo(l.ReportFile(c.ID), 0o644)
			return nil
		}
		return completed(c)
	})
	st := newTestState(t, chain(2)...)
	done := make(chan error, 1)
	go func() { done <- New(Options{Layout: l, Runtime: rt}).Drive(t.Context(), st) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("planagent hangs on a FIFO in reports/")
	}
	var taskErr string
	for _, tk := range st.Tasks {
		if tk.ID == "t000" {
			taskErr = tk.Error
		}
	}
	if s := status(st); s["t000"] != taskgraph.Failed || s["t001"] != taskgraph.Skipped {
		t.Fatalf("statuses %v", s)
	}
	if !strings.Contains(taskErr, "not a regular file") || !strings.Contains(taskErr, "FIFO") {
		t.Errorf("t000's error %q does not say the report is a FIFO", taskErr)
	}
}

func TestResumeRefusesAFIFOReport(t *testing.T) {
	l := newLayout(t)
	st := newTestState(t, chain(1)...)
	killedAfterDispatch(t, l, st, "t000")
	if err := syscall.Mkfifo(l.ReportFile("t000"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := runrecord.LoadState(l, "", true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- New(Options{Layout: l, Runtime: newFakeRuntime(l, completed)}).Drive(t.Context(), loaded)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("resume hangs on a FIFO in reports/")
	}
	if s := status(loaded); s["t000"] == taskgraph.InProgress || s["t000"] == taskgraph.Pending {
		t.Fatalf("statuses %v", s)
	}
}

// killedAfterDispatch saves st as a planagent killed right after it
// dispatched attempt 1 of id leaves it.
func killedAfterDispatch(t *testing.T, l volume.Layout, st *runrecord.State, id string) {
	t.Helper()
	g, _ := taskgraph.New(st.Tasks)
	_ = g.Start(id)
	st.Tasks = g.Tasks()
	st.Info[id].Attempt = 1
	st.Info[id].DispatchedAt = time.Now()
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
}
