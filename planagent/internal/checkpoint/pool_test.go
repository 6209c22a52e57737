package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// packStat is the inode and change time of each pack file of the copy at
// dir.
func packStat(t *testing.T, dir string) map[string][2]int64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, ".git", "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(dir, ".git", "objects", "pack", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		ctime, _ := gitindex.StatTimes(st)
		out[e.Name()] = [2]int64{int64(st.Ino), ctime.Nano()} //nolint:unconvert,gosec // uint64 on some platforms
	}
	return out
}

// A pooled copy made again and again in quick succession (a chain of
// quick tasks) keeps the packs it already has: each is written once, not
// on every use because its stamp was too recent to trust. A pack the agent
// changed (same size, other bytes) is still written back.
func TestPooledCopyWritesItsPacksOnce(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 1)
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "copy")
	remake := func() {
		t.Helper()
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
	}
	remake()
	first := packStat(t, dir)
	if len(first) == 0 {
		t.Fatal("the copy has no packs")
	}
	for range 3 {
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
		remake()
	}
	if got := packStat(t, dir); len(got) != len(first) {
		t.Fatalf("packs %v, then %v", first, got)
	} else {
		for name, st := range first {
			if got[name] != st {
				t.Errorf("%s was written again (inode, ctime %v, then %v)", name, st, got[name])
			}
		}
	}

	// The agent's edit of a pack, right after the copy was handed out.
	var pack string
	for name := range first {
		if filepath.Ext(name) == ".pack" {
			pack = filepath.Join(dir, ".git", "objects", "pack", name)
		}
	}
	data, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0xff
	if err := os.WriteFile(pack, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveCopy(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.NewCopy(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(pack); !bytes.Equal(got, data) {
		t.Error("the pack the agent changed was kept")
	}
	if out := sh(t, dir, "git fsck --no-dangling 2>&1 && git status --porcelain"); out != "" {
		t.Errorf("the copy after the agent's edit of its pack:\n%s", out)
	}
}

// The pool hands a copy of a commit the copy made at that commit when it
// has one, whichever was thrown away last: in a chain, the task before's
// acceptance copy is the next task's copy with nothing to write.
func TestPoolPrefersTheCopyOfTheCommit(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 3)
	ctx := t.Context()
	_, a := attempt(t, r, head, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	_, b := attempt(t, r, a, "b", func(dir string) { write(t, dir, "b.txt", "b\n") })
	base := t.TempDir()
	inode := func(dir string) uint64 {
		fi, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	want := map[string]uint64{}
	// Thrown away in this order: the copy of a is neither the first nor
	// the last.
	commits := []string{head, a, b}
	for _, commit := range commits {
		dir := filepath.Join(base, commit)
		if err := r.NewCopy(ctx, dir, commit); err != nil {
			t.Fatal(err)
		}
		want[commit] = inode(dir)
	}
	for _, commit := range commits {
		if err := r.RemoveCopy(filepath.Join(base, commit)); err != nil {
			t.Fatal(err)
		}
	}
	for i, commit := range []string{a, head, b} {
		dir := filepath.Join(base, "task", string(rune('0'+i)))
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := r.NewCopy(ctx, dir, commit); err != nil {
			t.Fatal(err)
		}
		if got := inode(dir); got != want[commit] {
			t.Errorf("the copy of %s is not the pooled copy made at it", short(commit))
		}
		if out := sh(t, dir, "git status --porcelain && git rev-parse HEAD"); out != commit {
			t.Errorf("the copy of %s: %q", short(commit), out)
		}
	}
}

// A copy remade along a chain gets the objects of each new commit without
// a new file: the cache's small packs reach it as one pack, whose files
// are renamed and rewritten in place as it changes, and the files of
// packs the cache merged take the names of the merged one. Over twenty
// tasks (one merge of the cache's packs among them, after which the copy
// needs two files fewer for a moment) the copy's pack files take at most
// one new pair of inodes (two per task before), and git finds every
// object.
func TestCopyRecyclesItsPackFiles(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 1)
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "copy")
	inodes := func() map[uint64]bool {
		out := map[uint64]bool{}
		for name := range packStat(t, dir) {
			fi, err := os.Lstat(filepath.Join(dir, ".git", "objects", "pack", name))
			if err != nil {
				t.Fatal(err)
			}
			out[fi.Sys().(*syscall.Stat_t).Ino] = true
		}
		return out
	}
	seen := map[uint64]bool{}
	first := 0
	for i := range 20 {
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		if out := sh(t, dir, "git fsck --no-dangling 2>&1 && git status --porcelain"); out != "" {
			t.Fatalf("task %d: the copy at %s:\n%s", i, short(head), out)
		}
		for ino := range inodes() {
			seen[ino] = true
		}
		if i == 1 {
			first = len(seen)
		}
		head = chainTask(t, r, dir, head, i)
		// Recycled, as a run does: the recycle merges the cache's packs
		// once they are many.
		if err := r.RecycleCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) > first+2 {
		t.Errorf("the copy's pack files took %d inodes over the chain, %d after its second task: new files were made", len(seen), first)
	}
	if n := r.cache.packs(); n >= 20 {
		t.Errorf("the cache holds %d packs: its packs were never merged, the test does not reach that case", n)
	}
	// What the merge took in is no longer kept in memory.
	if len(r.cache.small) >= r.cache.packs() {
		t.Errorf("%d small packs kept in memory, the cache has %d packs", len(r.cache.small), r.cache.packs())
	}
}

// An acceptance copy recycled at the commit it was made at comes back
// clean (what the commands left is gone) and is then taken as it is: the
// next copy of that commit is the same directory, not remade (its saved
// index is not written again). A copy of another commit is remade.
func TestRecycledCopyIsTakenAsItIs(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 2)
	ctx := t.Context()
	_, a := attempt(t, r, head, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	base := t.TempDir()
	accept := filepath.Join(base, "accept")
	if err := r.NewCopy(ctx, accept, a); err != nil {
		t.Fatal(err)
	}
	write(t, accept, "out/result.bin", "what the acceptance command left\n")
	write(t, accept, "a.txt", "changed by a test\n")
	if err := r.RecycleCopy(ctx, accept, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(accept); !os.IsNotExist(err) {
		t.Fatal("the recycled copy is still at its place")
	}
	stamp := func(dir string) [2]int64 {
		fi, err := os.Stat(filepath.Join(r.states.of(dir), "index"))
		if err != nil {
			t.Fatal(err)
		}
		return [2]int64{int64(fi.Sys().(*syscall.Stat_t).Ino), fi.ModTime().UnixNano()}
	}
	pooled, _ := filepath.Glob(filepath.Join(r.pool.dir, "*"))
	if len(pooled) != 1 {
		t.Fatalf("pool: %v", pooled)
	}
	saved := stamp(pooled[0])
	next := filepath.Join(base, "next")
	if err := r.NewCopy(ctx, next, a); err != nil {
		t.Fatal(err)
	}
	if got := stamp(next); got != saved {
		t.Error("the recycled copy was remade when taken")
	}
	if out := sh(t, next, "git status --porcelain --ignored && git rev-parse HEAD"); out != a {
		t.Errorf("the next copy: %q, want clean at %s", out, short(a))
	}
	if read(t, next, "a.txt") != "a\n" {
		t.Error("a.txt is not the commit's")
	}
	// Taken once: thrown away plainly, it is remade for the next use.
	if err := r.RemoveCopy(next); err != nil {
		t.Fatal(err)
	}
	pooled, _ = filepath.Glob(filepath.Join(r.pool.dir, "*"))
	if len(pooled) != 1 {
		t.Fatalf("pool: %v", pooled)
	}
	write(t, pooled[0], "stray.txt", "x\n")
	other := filepath.Join(base, "other")
	if err := r.NewCopy(ctx, other, a); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, other, "git status --porcelain --ignored"); out != "" {
		t.Errorf("a copy thrown away plainly was not remade: %q", out)
	}
}

// NewCopy of a commit a RecycleCopy is remaking a copy at waits for it and
// takes that copy, rather than remake another one beside it.
func TestNewCopyWaitsForTheRecycleOfItsCommit(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 2)
	ctx := t.Context()
	for i := range 5 {
		base := t.TempDir()
		accept := filepath.Join(base, "accept")
		if err := r.NewCopy(ctx, accept, head); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := r.RecycleCopy(ctx, accept, head); err != nil {
				t.Error(err)
			}
		})
		// RecycleCopy marks the commit before it returns to remake; wait
		// for the mark, as the orchestrator's dispatch comes after it.
		for {
			r.pool.mu.Lock()
			marked := r.pool.remaking[head] > 0
			r.pool.mu.Unlock()
			if marked {
				break
			}
			if _, err := os.Lstat(accept); os.IsNotExist(err) {
				break // already done
			}
			time.Sleep(time.Millisecond)
		}
		next := filepath.Join(base, "next")
		if err := r.NewCopy(ctx, next, head); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if pooled, _ := filepath.Glob(filepath.Join(r.pool.dir, "*")); len(pooled) != 0 {
			t.Errorf("round %d: the recycled copy stayed in the pool (%v): the next copy was made beside it", i, pooled)
		}
		if out := sh(t, next, "git status --porcelain --ignored && git rev-parse HEAD"); out != head {
			t.Errorf("round %d: the next copy: %q", i, out)
		}
		if err := r.DiscardCopy(next); err != nil {
			t.Fatal(err)
		}
	}
}

// A recycled copy taken for another commit is trusted: only the paths that
// differ between the two commits are written, and nothing else of it is
// looked at (a file put into it behind planagent's back stays, which is
// why only a copy planagent remade and nothing ran in since is trusted).
func TestRecycledCopyOfAnotherCommitWritesOnlyTheDifference(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 2)
	ctx := t.Context()
	_, a := attempt(t, r, head, "a", func(dir string) {
		write(t, dir, "keep/k.txt", "k\n")
		write(t, dir, "gone/g.txt", "g\n")
	})
	_, b := attempt(t, r, a, "b", func(dir string) {
		write(t, dir, "new.txt", "new\n")
		if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
			t.Fatal(err)
		}
	})
	base := t.TempDir()
	accept := filepath.Join(base, "accept")
	if err := r.NewCopy(ctx, accept, a); err != nil {
		t.Fatal(err)
	}
	if err := r.RecycleCopy(ctx, accept, a); err != nil {
		t.Fatal(err)
	}
	pooled, _ := filepath.Glob(filepath.Join(r.pool.dir, "*"))
	if len(pooled) != 1 {
		t.Fatalf("pool: %v", pooled)
	}
	write(t, pooled[0], "keep/stray.txt", "not looked at\n")
	next := filepath.Join(base, "next")
	if err := r.NewCopy(ctx, next, b); err != nil {
		t.Fatal(err)
	}
	if read(t, next, "new.txt") != "new\n" || read(t, next, "keep/k.txt") != "k\n" {
		t.Error("the copy is not at the commit asked for")
	}
	if _, err := os.Lstat(filepath.Join(next, "gone")); !os.IsNotExist(err) {
		t.Error("the directory the commit removed is still there")
	}
	if out := sh(t, next, "git rev-parse HEAD && git status --porcelain"); out != b+"\n?? keep/stray.txt" {
		t.Errorf("HEAD and status of the copy: %q", out)
	}
}

// Recycling a copy that is gone (a resumed run's attempt whose copy a
// crash took) makes nothing: no copy is checked out anew to be pooled.
func TestRecycleOfAMissingCopyMakesNothing(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 2)
	dir := filepath.Join(t.TempDir(), "gone")
	if err := r.RecycleCopy(t.Context(), dir, head); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the missing copy was made: %v", err)
	}
	if pooled, _ := filepath.Glob(filepath.Join(r.pool.dir, "*")); len(pooled) != 0 {
		t.Errorf("pool: %v", pooled)
	}
}

// A copy set aside leaves its place at once, and recycled from where it
// went, it is the pool's ready copy; nothing stays aside.
func TestSetAsideThenRecycle(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 2)
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "task.1")
	if err := r.NewCopy(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "left.txt", "what the attempt left\n")
	aside, ok, err := r.SetAside(dir)
	if err != nil || !ok {
		t.Fatalf("SetAside: %v %v", ok, err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Error("the copy is still at its place")
	}
	if err := r.RecycleCopy(ctx, aside, head); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(r.pool.dir + ".aside"); len(left) != 0 {
		t.Errorf("left aside: %v", left)
	}
	next := filepath.Join(t.TempDir(), "next")
	if err := r.NewCopy(ctx, next, head); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, next, "git status --porcelain --ignored && git rev-parse HEAD"); out != head {
		t.Errorf("the next copy: %q", out)
	}
	if pooled, _ := filepath.Glob(filepath.Join(r.pool.dir, "*")); len(pooled) != 0 {
		t.Errorf("the ready copy was not the one taken: pool %v", pooled)
	}
}

// A squashed copy is recycled from its squash, which looked at every file:
// only what differs between the squash and the commit asked for is
// written, and what the commit does not hold (ignored and untracked files)
// is removed; the rest is not looked at again.
func TestSquashedCopyIsRecycledFromItsSquash(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 2)
	ctx := t.Context()
	squashed := func(t *testing.T) (dir, commit string) {
		dir = filepath.Join(t.TempDir(), "a")
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "notes.txt", "changed\n")
		write(t, dir, "sub/deep/x.txt", "x\n")
		write(t, dir, "build/out.o", "ignored\n")
		commit, _, err := r.Squash(ctx, dir, head, "a: x", "")
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "stray.txt", "after the squash\n")
		return dir, commit
	}
	pooled := func(t *testing.T) string {
		t.Helper()
		p, _ := filepath.Glob(filepath.Join(r.pool.dir, "*"))
		if len(p) != 1 {
			t.Fatalf("pool: %v", p)
		}
		return p[0]
	}
	t.Run("to its base", func(t *testing.T) {
		dir, _ := squashed(t)
		if err := r.RecycleCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		p := pooled(t)
		if out := sh(t, p, "git rev-parse HEAD && git status --porcelain --ignored"); out != head {
			t.Errorf("HEAD and status of the recycled copy: %q, want %s and nothing else", out, head)
		}
		// Its files' contents, not only what its index says of them.
		if got, want := sh(t, p, "git ls-files -z | xargs -0 git hash-object"), sh(t, p, "git ls-tree -r --format='%(objectname)' HEAD"); got != want {
			t.Errorf("the recycled copy's files hash to\n%s\nwant\n%s", got, want)
		}
		if read(t, p, "notes.txt") != "one\ntwo\nthree\n" {
			t.Errorf("notes.txt = %q", read(t, p, "notes.txt"))
		}
		for _, gone := range []string{"sub", "build", "stray.txt"} {
			if _, err := os.Lstat(filepath.Join(p, gone)); !os.IsNotExist(err) {
				t.Errorf("%s is still in the recycled copy", gone)
			}
		}
		if err := r.NewCopy(ctx, filepath.Join(t.TempDir(), "next"), head); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("not looked at again", func(t *testing.T) {
		dir, commit := squashed(t)
		// Same size, so only the stat data would tell: the squash's look
		// is trusted, as a recycled copy's is, and the full check would
		// write the file back.
		edited := filepath.Join(dir, "héllo wörld.txt")
		checkedOut, err := os.Stat(edited)
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "héllo wörld.txt", "UNICODE\n")
		// The git status below is a witness, and git as usually built
		// (no USE_NSEC) compares whole seconds of mtime and ctime: an
		// edit in the second of the checkout, with the recycled copy's
		// index written in a later one (so not racily clean), looks
		// unchanged to it (seen under load). An mtime a minute away has
		// git hash the file whatever the clock.
		old := checkedOut.ModTime().Add(-time.Minute)
		if err := os.Chtimes(edited, old, old); err != nil {
			t.Fatal(err)
		}
		if err := r.RecycleCopy(ctx, dir, commit); err != nil {
			t.Fatal(err)
		}
		p := pooled(t)
		if got := read(t, p, "héllo wörld.txt"); got != "UNICODE\n" {
			t.Errorf("héllo wörld.txt = %q: the recycle looked at the squashed copy's files again", got)
		}
		if out := sh(t, p, "git rev-parse HEAD && git status --porcelain --ignored"); out != commit+"\n M \"h\\303\\251llo w\\303\\266rld.txt\"" {
			t.Errorf("HEAD and status of the recycled copy: %q", out)
		}
		if _, err := os.Lstat(filepath.Join(p, "build")); !os.IsNotExist(err) {
			t.Error("the ignored build/ is still in the recycled copy")
		}
	})
}

// The object cache's small packs (one per squash) are merged by a recycle,
// off the tasks' path, not by the copy a task waits for: that copy merges
// them only when there are very many (a run without recycles).
func TestCachePacksAreMergedByTheRecycle(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, _, head := pooledRepo(t, 1)
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "copy")
	for i := range maxCachePacks + 2 {
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		head = chainTask(t, r, dir, head, i)
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.NewCopy(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	if n := r.cache.packs(); n <= maxCachePacks {
		t.Fatalf("the cache holds %d packs after the copies alone: they merged them", n)
	}
	if err := r.RecycleCopy(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	if n := r.cache.packs(); n > maxCachePacks {
		t.Errorf("the cache holds %d packs after a recycle, want at most %d", n, maxCachePacks)
	}
	next := filepath.Join(t.TempDir(), "next")
	if err := r.NewCopy(ctx, next, head); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, next, "git fsck --no-dangling 2>&1 && git status --porcelain && git rev-parse HEAD"); out != head {
		t.Errorf("the copy after the merge: %q", out)
	}
}

// chainTask is task i of a chain in the copy at dir, made at head: it
// writes a file of its own, is squashed and applied, and its commit is
// the chain's new head.
func chainTask(t *testing.T, r *Repo, dir, head string, i int) string {
	t.Helper()
	write(t, dir, fmt.Sprintf("f%02d.txt", i), "task\n")
	commit, _, err := r.Squash(t.Context(), dir, head, fmt.Sprintf("task %d", i), "")
	if err != nil {
		t.Fatal(err)
	}
	if head, err = r.Apply(t.Context(), dir, head, commit, head); err != nil {
		t.Fatal(err)
	}
	return head
}
