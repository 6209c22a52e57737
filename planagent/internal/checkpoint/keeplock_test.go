package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A planagent killed (kill -9) while git held a keep ref's lock leaves
// refs/codeagent/keep/<sha>.lock in the user's repository. The next Open
// removes it once it is old, leaves a fresh one (a live update-ref) alone,
// and the commit's keep ref can be made again.
func TestStaleKeepLockIsRemoved(t *testing.T) {
	ws := userRepo(t)
	head := strings.TrimSpace(sh(t, ws, "git rev-parse HEAD"))
	dir := filepath.Join(ws, ".git", "refs", "codeagent", "keep")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(dir, head+".lock"), filepath.Join(dir, strings.Repeat("0", 40)+".lock")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte(head+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleLockAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	r := open(t, ws)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale lock is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh lock (a live update-ref's) was removed: %v", err)
	}
	if err := r.keep(t.Context(), head); err != nil {
		t.Fatalf("keep ref of %s after the stale lock: %v", head, err)
	}
	_ = os.Remove(fresh)
	if err := r.DropKeeps(t.Context()); err != nil {
		t.Fatal(err)
	}
}
