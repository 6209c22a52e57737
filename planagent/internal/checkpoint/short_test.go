package checkpoint

import "testing"

// gitHeavy skips t in the edit-test loop (go test -short): it runs many git
// processes (a comparison with git's own result, a pool of copies, a chain
// of moves), which is most of the short suite's time on a busy machine.
// make test, .ci/run and go test without -short run it.
func gitHeavy(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("git-heavy: run without -short (make test)")
	}
}
