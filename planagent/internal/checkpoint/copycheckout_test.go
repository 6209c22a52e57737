package checkpoint

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// copyCheckout's steps on a copy made at c0 brought to c1: plan writes
// the paths c1 changes and the tracked file the agent changed behind the
// saved index, nothing else; removeGone removes what c1 drops; finish
// leaves the index and HEAD git's checkout would (git status finds the
// copy clean at c1). A commit that adds an attributes file that converts
// is left to git (plain). The comparison with git over many commits and
// messes is TestCheckoutCopyIsGitCheckout (not in -short).
func TestCopyCheckoutSteps(t *testing.T) {
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	c0, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, c1 := attempt(t, r, c0, "c1", func(dir string) {
		write(t, dir, "src/a.go", "package src\n")
		if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
			t.Fatal(err)
		}
	})
	_, c2 := attempt(t, r, c1, "c2", func(dir string) {
		write(t, dir, ".gitattributes", "*.txt eol=crlf\n")
	})
	dir := filepath.Join(t.TempDir(), "copy")
	if err := r.NewCopy(ctx, dir, c0); err != nil {
		t.Fatal(err)
	}
	// The copy made a while before its saved index was written: no file
	// is racily clean (git's and plan's rule: a file as new as the index
	// is looked at), so only what differs is written.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(r.states.of(dir), "index"), later, later); err != nil {
		t.Fatal(err)
	}
	// The agent's edit, of another size than the saved index has.
	write(t, dir, "héllo wörld.txt", "changed by the agent\n")

	co, err := r.copies.startCheckout(dir, c0, c1, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := co.plain(); err != nil {
		t.Fatalf("plain: %v", err)
	}
	co.plan()
	if got, want := slices.Sorted(maps.Keys(co.write)), []string{"héllo wörld.txt", "src/a.go"}; !slices.Equal(got, want) {
		t.Errorf("plan writes %q, want %q", got, want)
	}
	for _, step := range []func() error{co.removeGone, co.writeFiles, co.finish} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "notes.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("notes.txt, which c1 removes, is still there: %v", err)
	}
	if got := read(t, dir, "héllo wörld.txt"); got != "unicode\n" {
		t.Errorf("the agent's edit stayed: %q", got)
	}
	if got := read(t, dir, ".git/HEAD"); got != c1+"\n" {
		t.Errorf("HEAD %q, want %s", got, c1)
	}
	// c1's new objects wait with the pending ones, which the copy's git
	// reads for this look only.
	if st := sh(t, dir, withPending(r)+"git status --porcelain"); st != "" {
		t.Errorf("the copy is not clean at c1: %q", st)
	}

	co, err = r.copies.startCheckout(dir, c1, c2, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := co.plain(); !errors.Is(err, errGitCheckout) {
		t.Errorf("c2 adds an attributes file with eol=crlf: plain says %v, want errGitCheckout", err)
	}
}
