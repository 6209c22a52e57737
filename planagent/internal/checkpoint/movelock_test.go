package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// The move's stale locks (what a git killed mid-move leaves, which
// `planagent rollback` names): the index's, the branch's in the common
// directory (a linked worktree's too), HEAD's when it is detached, and
// none when nothing is locked.
func TestWorkspaceMoveStaleLock(t *testing.T) {
	ws := userRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	sh(t, ws, "git worktree add -q -b side '"+linked+"'")
	detached := userRepo(t)
	sh(t, detached, "git switch -q --detach")
	for _, c := range []struct {
		name, ws, lock string
	}{
		{"index", ws, filepath.Join(ws, ".git", "index.lock")},
		{"branch", ws, filepath.Join(ws, ".git", "refs", "heads", "main.lock")},
		// Refs are the common directory's: the main repository's.
		{"linked worktree's branch", linked, filepath.Join(ws, ".git", "refs", "heads", "side.lock")},
		{"detached HEAD", detached, filepath.Join(detached, ".git", "HEAD.lock")},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := open(t, c.ws).move
			if got := m.staleLock(); got != "" {
				t.Fatalf("stale lock %q before any was left", got)
			}
			write(t, filepath.Dir(c.lock), filepath.Base(c.lock), "")
			t.Cleanup(func() { _ = os.Remove(c.lock) })
			if got := m.staleLock(); !samePath(got, c.lock) {
				t.Errorf("stale lock %q, want %s", got, c.lock)
			}
		})
	}
}
