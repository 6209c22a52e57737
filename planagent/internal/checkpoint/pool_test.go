package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
		ctime, _ := statTimes(st)
		out[e.Name()] = [2]int64{int64(st.Ino), ctime.Nano()} //nolint:unconvert,gosec // uint64 on some platforms
	}
	return out
}

// A pooled copy made again and again in quick succession (a chain of
// quick tasks) keeps the packs it already has: each is written once, not
// on every use because its stamp was too recent to trust. A pack the agent
// changed (same size, other bytes) is still written back.
func TestPooledCopyWritesItsPacksOnce(t *testing.T) {
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
		write(t, dir, fmt.Sprintf("f%02d.txt", i), "task\n")
		commit, _, err := r.Squash(ctx, dir, head, fmt.Sprintf("task %d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		if head, err = r.Apply(ctx, dir, head, commit, head); err != nil {
			t.Fatal(err)
		}
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) > first+2 {
		t.Errorf("the copy's pack files took %d inodes over the chain, %d after its second task: new files were made", len(seen), first)
	}
	if n := r.cachePacks(); n >= 20 {
		t.Errorf("the cache holds %d packs: its packs were never merged, the test does not reach that case", n)
	}
	// What the merge took in is no longer kept in memory.
	if len(r.small) >= r.cachePacks() {
		t.Errorf("%d small packs kept in memory, the cache has %d packs", len(r.small), r.cachePacks())
	}
}
