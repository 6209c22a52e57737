//go:build clientgo

package kube

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/runtime/runtimetest"
)

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// staticCodingAgent builds codingagent once per test binary, static as
// `make build` does: the boundary probe's tests run it on this host in
// place of the pod's.
func staticCodingAgent(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "codeagent-kube-test-") //nolint:usetesting // shared by every test of the binary, so not the first caller's t.TempDir(): TestMain removes it
		if err != nil {
			buildErr = err
			return
		}
		builtBinary, buildErr = runtimetest.BuildCodingAgent(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBinary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		_ = os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}
