package orchestrator

import (
	"slices"
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
