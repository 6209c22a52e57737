package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The keep ref of a commit is written even when the context is cancelled
// meanwhile (Prewarm's is, as soon as the run starts): a git update-ref
// killed midway would leave its lock file, and the run's first copy of
// that commit would then fail with "cannot lock ref … File exists" (seen
// under load in an e2e run).
func TestKeepOutlivesCancellation(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	head, err := r.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.keep(ctx, head); err != nil {
		t.Fatalf("keep with a cancelled context: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.GitDir(), keepRef(head)+".lock")); !os.IsNotExist(err) {
		t.Errorf("a lock file is left: %v", err)
	}
	if err := r.NewCopy(t.Context(), filepath.Join(t.TempDir(), "c"), head); err != nil {
		t.Fatal(err)
	}
}
