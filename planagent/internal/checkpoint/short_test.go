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

// onlySha256InShort skips the sha1 case of a comparison with git in the
// edit-test loop: every other test's squashes, merges and copies write
// and read sha1 commits and packs through git (and TestHostileCopyRunsNothingOnTheHost
// has git fsck --strict check them), while sha256 is tried nowhere else
// in -short. make test runs both.
func onlySha256InShort(t *testing.T, format string) {
	t.Helper()
	if testing.Short() && format == "sha1" {
		t.Skip("sha1 is written and read by git in the other tests: run without -short (make test) for this comparison")
	}
}
