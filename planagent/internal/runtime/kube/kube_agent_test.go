//go:build clientgo

package kube

import (
	"os"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/runtime/runtimetest"
)

// codingAgent is built at most once for this test binary.
var codingAgent runtimetest.CodingAgentOnce

// staticCodingAgent builds codingagent once per test binary, static as
// `make build` does: the boundary probe's tests run it on this host in
// place of the pod's.
func staticCodingAgent(t testing.TB) string {
	t.Helper()
	return codingAgent.Path(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	codingAgent.Remove()
	os.Exit(code)
}
