package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
)

// systemRunner completes every command, keeping the system context it got.
type systemRunner struct{ got chan string }

func (r systemRunner) Run(_ context.Context, _ *protocol.Command, system string, _ events.Sink) (*protocol.Report, error) {
	r.got <- system
	return &protocol.Report{Status: protocol.StatusCompleted, Body: "done"}, nil
}

// A task's system context holds the AGENTS.md of the copy it works in,
// not the default workspace's.
func TestTaskContextHasTheCopysAgentsMD(t *testing.T) {
	l := newLayout(t)
	c, dir := attemptCopy(t, l, "t1")
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("COPY-CONVENTIONS: run make lint\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.Workspace(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Workspace(), "AGENTS.md"), []byte("DEFAULT-WORKSPACE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dropCommand(t, l, c)
	r := systemRunner{got: make(chan string, 1)}
	if err := Run(t.Context(), Options{Layout: l, Runner: r, Task: "t1", Logger: testLogger(t)}); err != nil {
		t.Fatal(err)
	}
	select {
	case system := <-r.got:
		if !strings.Contains(system, "## [project] AGENTS.md (workspace)\n\nCOPY-CONVENTIONS: run make lint\n") || strings.Contains(system, "DEFAULT-WORKSPACE") {
			t.Errorf("system context:\n%s", system)
		}
	case <-time.After(testWait):
		t.Fatal("the runner was not called")
	}
}
