package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Advance never writes into a checkout the user switched away from the
// run's branch (another branch, a detached HEAD): a SwitchedError, nothing
// moved, nothing staged. A commit of the user's on the branch is told
// apart (MovedError, Ahead) from a branch reset below the run's commit.
func TestAdvanceRefusesASwitchedCheckout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, git, now string }{
		{"new branch", "git switch -q -c other", "other"},
		{"detached", "git switch -q --detach", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := userRepo(t)
			r := open(t, ws)
			ctx := t.Context()
			start, _ := r.Head(ctx)
			_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
			sh(t, ws, tc.git)
			err := r.Advance(ctx, start, a)
			var sw *SwitchedError
			if !errors.As(err, &sw) || sw.Branch != "main" || sw.Now != tc.now {
				t.Fatalf("Advance on a switched checkout: %v", err)
			}
			if h := sh(t, ws, "git rev-parse main"); h != start {
				t.Errorf("main moved to %s", h)
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" {
				t.Errorf("status %q: the task's file was written or staged", st)
			}
			if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
				t.Error("a.txt written into the switched checkout")
			}
		})
	}
	t.Run("moved", func(t *testing.T) {
		t.Parallel()
		ws := userRepo(t)
		r := open(t, ws)
		ctx := t.Context()
		start, _ := r.Head(ctx)
		_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
		sh(t, ws, "echo mine > mine.txt && git add mine.txt && git commit -q -m mine")
		var moved *MovedError
		if err := r.Advance(ctx, start, a); !errors.As(err, &moved) || !moved.Ahead || !errors.Is(err, ErrMoved) {
			t.Fatalf("Advance after a user's commit: %v", err)
		}
		sh(t, ws, "git reset -q --hard "+start+"~0 && git commit -q --amend -m rewritten")
		if err := r.Advance(ctx, start, a); !errors.As(err, &moved) || moved.Ahead {
			t.Fatalf("Advance after a rewrite: %v", err)
		}
	})
}
