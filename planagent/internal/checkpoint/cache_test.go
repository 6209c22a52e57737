package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The object cache on its own: made on first use with the history of the
// commit asked for, each later commit packed into it, held for reading
// only for what it holds, and removed with what it held forgotten.
func TestObjectCache(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	first, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, "notes.txt", "four\n")
	sh(t, ws, "git commit -q -am second")
	second := sh(t, ws, "git rev-parse HEAD")

	c := newObjectCache(filepath.Join(t.TempDir(), "objects.git"), r.GitDir(), r.objectFormat, r.pending.alternates())
	has := func(commit string) bool {
		t.Helper()
		// Only the cache's own objects: no alternates reach the repository.
		cmd := exec.Command("git", "--git-dir="+c.dir, "cat-file", "-e", commit+"^{tree}")
		cmd.Env = append(os.Environ(), "GIT_ALTERNATE_OBJECT_DIRECTORIES=")
		return cmd.Run() == nil
	}
	if c.hold(first) {
		t.Fatal("an empty cache says it holds a commit")
	}
	if err := c.fill(ctx, first, maxCachePacks); err != nil {
		t.Fatal(err)
	}
	if !has(first) || has(second) {
		t.Fatalf("after filling with the first commit: first %v, second %v", has(first), has(second))
	}
	if n := c.packs(); n != 1 {
		t.Errorf("%d packs after one fill, want 1", n)
	}
	if err := c.fill(ctx, second, maxCachePacks); err != nil {
		t.Fatal(err)
	}
	if !has(second) || c.packs() != 2 {
		t.Errorf("the second commit: held %v, %d packs (want one more pack, without the first's history again)", has(second), c.packs())
	}
	if !c.hold(first, second) {
		t.Fatal("the cache does not say it holds both commits")
	}
	c.release()
	if c.hold(second, "0123456789012345678901234567890123456789") {
		t.Fatal("the cache says it holds a commit never put in it")
	}
	// A hold refused leaves no read lock behind: remove takes the cache
	// exclusively.
	ran := false
	if err := errorsOf(c.remove(func() []error { ran = true; return nil })); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Error("remove did not run what it was given")
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("the cache is still there: %v", err)
	}
	if c.hold(first) {
		t.Error("a removed cache says it holds a commit")
	}
	// Made again on the next use.
	if err := c.fill(ctx, second, maxCachePacks); err != nil || !has(second) || !has(first) {
		t.Errorf("refilled: %v, second %v, first %v", err, has(second), has(first))
	}
}

func errorsOf(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
