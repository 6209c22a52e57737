package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// objectsOf lists every object the repository at ws holds itself (as the
// user's git sees it, without planagent's alternates), with the counts.
func objectsOf(t *testing.T, ws string) string {
	t.Helper()
	return sh(t, ws, "git count-objects -v | grep -v '^size' && git cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype)'")
}

// A task whose move fails leaves no object of its own in the user's
// repository: neither when the workspace refuses the move (a file the
// user changed), nor when the move fails once the task's objects are in
// (the branch locked: they are taken out again), nor once the run ends.
// Its move, once it can be made, brings in exactly what the branch then
// holds: nothing unreachable.
func TestFailedMoveLeavesNoObjectsOfItsOwn(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	r.SetPool(filepath.Join(t.TempDir(), "pool"), 3)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	before := objectsOf(t, ws)

	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "notes.txt", "the task's\n")
	write(t, dir, "new/file.txt", "new\n")
	c, _, err := r.Squash(ctx, dir, start, "a: task", "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Apply(ctx, dir, start, c, start)
	if err != nil {
		t.Fatal(err)
	}
	// The acceptance copy, as a run makes it: no keep ref to a commit
	// the repository lacks.
	accept := dir + ".accept"
	if err := r.NewCopy(ctx, accept, m); err != nil {
		t.Fatal(err)
	}
	if got := objectsOf(t, ws); got != before {
		t.Errorf("the task's squash and merge are in the repository:\n%s\nwas\n%s", got, before)
	}
	sh(t, ws, "git fsck --no-dangling")

	write(t, ws, "notes.txt", "the user's\n")
	var changed *ChangedError
	if err := r.Advance(ctx, start, m); !errors.As(err, &changed) {
		t.Fatalf("move over the user's change = %v, want a ChangedError", err)
	}
	if got := objectsOf(t, ws); got != before {
		t.Errorf("a refused move left objects:\n%s\nwas\n%s", got, before)
	}

	sh(t, ws, "git checkout -q notes.txt && touch .git/refs/heads/main.lock")
	if err := r.Advance(ctx, start, m); err == nil {
		t.Fatal("the move with the branch locked succeeded")
	}
	if got := objectsOf(t, ws); got != before {
		t.Errorf("a move put back left objects:\n%s\nwas\n%s", got, before)
	}
	if _, err := os.Lstat(filepath.Join(ws, "new", "file.txt")); err == nil {
		t.Error("the move put back left the task's file")
	}
	if out := sh(t, ws, "git fsck --unreachable --no-reflogs && git status --porcelain"); out != "" {
		t.Errorf("after the move put back:\n%s", out)
	}

	// Now it can move: exactly what the branch holds comes in.
	sh(t, ws, "rm .git/refs/heads/main.lock")
	if err := r.Advance(ctx, start, m); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, ws, "git fsck --strict --full --unreachable --no-reflogs && git status --porcelain"); out != "" {
		t.Errorf("after the move:\n%s", out)
	}
	if read(t, ws, "new/file.txt") != "new\n" {
		t.Error("the task's file did not reach the workspace")
	}
}

// A task that never moves (its acceptance failed, it conflicted, the run
// ended first) leaves nothing once the run ends; merges onto a state
// that moved bring in only what the branch holds, and a merge onto a
// commit the branch never moved to brings that commit's objects along.
func TestOnlyMovedTasksLeaveObjects(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	r.SetPool(filepath.Join(t.TempDir(), "pool"), 3)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	before := objectsOf(t, ws)

	// Failed: squashed and merged, never moved to.
	_, failed := attempt(t, r, start, "failed", func(dir string) { write(t, dir, "failed.txt", "never\n") })
	if err := r.DropKeeps(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.DrainPool(); err != nil {
		t.Fatal(err)
	}
	if got := objectsOf(t, ws); got != before {
		t.Errorf("the failed task left objects:\n%s\nwas\n%s", got, before)
	}
	sh(t, ws, "git fsck --no-dangling")
	if err := r.Advance(ctx, start, failed); err == nil {
		t.Error("a move to the failed task's commit worked after the run ended")
	}

	// Fan-out: two tasks from start, the second merged onto the first.
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	dirB, b := attempt(t, r, start, "b", func(dir string) { write(t, dir, "b.txt", "b\n") })
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	mb, err := r.Apply(ctx, dirB, start, b, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, a, mb); err != nil {
		t.Fatal(err)
	}
	// b's own commit and tree stay out: only its merge is on the branch.
	if out := sh(t, ws, "git fsck --strict --full --unreachable --no-reflogs"); out != "" {
		t.Errorf("after the fan-out:\n%s", out)
	}

	// A merge onto a task's commit the branch skips.
	_, c := attempt(t, r, mb, "c", func(dir string) { write(t, dir, "c.txt", "c\n") })
	dirD, d := attempt(t, r, mb, "d", func(dir string) { write(t, dir, "d.txt", "d\n") })
	md, err := r.Apply(ctx, dirD, mb, d, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, mb, md); err != nil {
		t.Fatal(err)
	}
	if err := r.DropKeeps(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.DrainPool(); err != nil {
		t.Fatal(err)
	}
	sh(t, ws, "git fsck --strict --full --no-dangling")
	if got := sh(t, ws, "git -c core.quotepath=false ls-tree --name-only HEAD | tr '\\n' ' '"); got != ".gitignore a.txt b.txt c.txt d.txt héllo wörld.txt notes.txt" {
		t.Errorf("HEAD holds %s", got)
	}
}

// The pending objects on their own, with object files that are plain
// files (no git): admitted into the repository's objects (indexes after
// their packs, what is there already left), taken back out, drained.
func TestPendingObjects(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := pendingObjects{dir: filepath.Join(root, "pending"), objects: filepath.Join(root, "objects")}
	if (pendingObjects{objects: p.objects}).target() != p.objects || p.target() != p.dir {
		t.Error("target is not the pending directory, or the objects without one")
	}
	if got, want := p.alternates(), p.objects+":"+p.dir; got != want {
		t.Errorf("alternates %q, want %q", got, want)
	}
	id := "ab" + strings.Repeat("1", 38)
	write(t, p.dir, filepath.Join("ab", id[2:]), "commit")
	write(t, p.dir, "pack/pack-1.pack", "pack")
	write(t, p.dir, "pack/pack-1.idx", "idx")
	write(t, p.dir, "pack/tmp_pack_x", "cut short")
	write(t, p.dir, "cd/"+strings.Repeat("2", 38), "pending")
	write(t, p.objects, "cd/"+strings.Repeat("2", 38), "there already")
	if !p.has(id) || p.has("ef"+strings.Repeat("3", 38)) {
		t.Error("has does not tell the pending object from another")
	}
	moved, err := p.admitAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("ab", id[2:]), filepath.Join("pack", "pack-1.pack"), filepath.Join("pack", "pack-1.idx")}
	if !slices.Equal(moved, want) {
		t.Errorf("admitted %v, want %v (the index last, nothing cut short or there already)", moved, want)
	}
	if p.has(id) || read(t, p.objects, filepath.Join("ab", id[2:])) != "commit" {
		t.Error("the commit did not move into the objects")
	}
	if err := p.unadmit(moved); err != nil {
		t.Fatal(err)
	}
	if !p.has(id) || read(t, p.dir, "pack/pack-1.idx") != "idx" {
		t.Error("unadmit did not take the objects back out")
	}
	if err := p.drain(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(p.dir); err != nil || len(entries) != 0 {
		t.Errorf("drained, the pending directory holds %v (%v); want it empty and there", entries, err)
	}
}
