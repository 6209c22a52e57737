package orchestrator

import "testing"

// coveredInShort skips t in the edit-test loop (go test -short). It is for
// a test that drives real checkpoints (40–60 git processes: copies,
// merges, moves, refs) through a scenario whose decisions the pure tests
// of next and series check without git, and whose plumbing another
// real-checkpoint test of its family still runs in -short: covered names
// that one. make test, .ci/run and go test without -short run it.
func coveredInShort(t *testing.T, covered string) {
	t.Helper()
	if testing.Short() {
		t.Skip("git-heavy, its path covered in -short by " + covered + ": run without -short (make test)")
	}
}
