package checkpoint

import (
	"bytes"
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
