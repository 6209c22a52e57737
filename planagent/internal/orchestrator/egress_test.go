package orchestrator

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

type egressLog map[string][]string

func (e egressLog) Refused(name string) []string { return e[name] }

// What the egress proxy refused an attempt is on that attempt's result,
// so status --json and the summary say why a download in it failed.
func TestEgressRefusalsAreOnTheAttemptsResult(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report { return completed(c) })
	st := newTestState(t, plan.Task{ID: "fetch", Description: "get a module"}, plan.Task{ID: "quiet", Description: "offline"})
	refused := []string{"CONNECT evil.example:443: not in the allow-list", "and 3 more"}
	o := New(Options{Layout: l, Runtime: rt, Egress: egressLog{attempt.Name("fetch", 1): refused}})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	res := st.Info["fetch"].Results
	if len(res) != 1 || !slices.Equal(res[0].EgressRefused, refused) {
		t.Errorf("fetch's results %+v, want attempt 1 with the refusals %q", res, refused)
	}
	if q := st.Info["quiet"].Results; len(q) != 1 || q[0].EgressRefused != nil {
		t.Errorf("quiet's results %+v, want no refusal", q)
	}
}

// lateEgressLog is an egress log that learns of refusals as they happen.
type lateEgressLog struct {
	mu  sync.Mutex
	got map[string][]string
}

func (e *lateEgressLog) Refused(name string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got[name])
}

// A refusal of the task's acceptance command, which runs after the
// attempt's report, is on that attempt's result too.
func TestEgressRefusalsOfTheAcceptanceCommandAreOnTheResult(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report { return completed(c) })
	log := &lateEgressLog{got: map[string][]string{}}
	rt.exec = func(command string) attempt.ExecResult {
		log.mu.Lock()
		log.got[attempt.Name("fetch", 1)] = []string{"CONNECT proxy.golang.org:443 refused: not in the egress allow-list"}
		log.mu.Unlock()
		return attempt.ExecResult{Output: "go: downloading failed: 403", ExitCode: 0}
	}
	st := newTestState(t, plan.Task{ID: "fetch", Description: "get a module", Acceptance: []string{"go test ./..."}})
	o := New(Options{Layout: l, Runtime: rt, Egress: log})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	res := st.Info["fetch"].Results
	if len(res) != 1 || len(res[0].EgressRefused) != 1 || !strings.Contains(res[0].EgressRefused[0], "proxy.golang.org") {
		t.Errorf("fetch's results %+v, want attempt 1 with the acceptance command's refusal", res)
	}
}
