package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// makeSparse makes a file of size bytes at dir/name that takes no disk: a
// hole, as `truncate -s` makes.
func makeSparse(t *testing.T, dir, name string, size int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Truncate(size), f.Close()); err != nil {
		t.Fatal(err)
	}
}

// A sparse file of a gigabyte costs the agent nothing; its squash is
// refused by its size before git reads it, with the file, its size, the
// limit and the setting named, and nothing of it reaches the repository
// or the workspace.
func TestSparseFileAboveTheLimitIsRefused(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	objects := sh(t, ws, "git count-objects -v")
	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	makeSparse(t, dir, "big", 1<<30)
	write(t, dir, "small.txt", "small\n")
	commit, _, err := r.Squash(ctx, dir, start, "a: big", "")
	var tl *FileTooLargeError
	if !errors.As(err, &tl) || tl.Path != "big" || tl.Size != 1<<30 || tl.Max != DefaultMaxFileSize {
		t.Fatalf("squash = %s, %v; want a FileTooLargeError for big", commit, err)
	}
	for _, want := range []string{"big is 1073741824 bytes (1.0 GiB)", "104857600 bytes (100.0 MiB)", "max_file_size", "CODEAGENT_MAX_FILE_SIZE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if got := sh(t, ws, "git count-objects -v"); got != objects {
		t.Errorf("the repository's objects changed:\n%s\nwas\n%s", got, objects)
	}
	if _, err := os.Lstat(filepath.Join(ws, "big")); err == nil {
		t.Error("the big file reached the workspace")
	}
}

// The size limit counts only what git would read: an ignored file, or a
// tracked one whose stat data is the saved index's, may be larger. A new
// or changed file above it is refused, the others counted.
func TestFileSizeLimitCountsWhatGitReads(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	data := strings.Repeat("d", 5000)
	write(t, ws, "data.bin", data)
	write(t, ws, ".gitignore", "build/\n*.log\n")
	sh(t, ws, "git add -A && git commit -q -m data")
	r := open(t, ws)
	r.SetLimits(Limits{MaxFileSize: 1000})
	ctx := t.Context()
	start, _ := r.Head(ctx)

	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "build/out.bin", data)
	write(t, dir, "deep/run.log", data)
	write(t, dir, "ok.txt", "fine\n")
	if _, _, err := r.Squash(ctx, dir, start, "a: ignored", ""); err != nil {
		t.Fatalf("squash with large files git ignores or keeps: %v", err)
	}

	dir = filepath.Join(t.TempDir(), "b")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "data.bin", data+"more")
	write(t, dir, "new.bin", data)
	_, _, err := r.Squash(ctx, dir, start, "b: large", "")
	var tl *FileTooLargeError
	if !errors.As(err, &tl) || tl.Path != "data.bin" || tl.Size != 5004 || tl.Max != 1000 || tl.More != 1 ||
		!strings.Contains(err.Error(), "(and 1 more files)") {
		t.Errorf("squash = %v, want a FileTooLargeError for data.bin and one more", err)
	}
}

// More files than max_files (tracked, or untracked and not ignored) fail
// the squash, named; ignored ones do not count.
func TestTooManyFilesAreRefused(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	r.SetLimits(Limits{MaxFiles: 20})
	ctx := t.Context()
	start, _ := r.Head(ctx)
	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "mkdir -p build gen && for i in $(seq 1 30); do echo $i > build/f$i; done")
	if _, _, err := r.Squash(ctx, dir, start, "a: ignored", ""); err != nil {
		t.Fatalf("squash with 30 ignored files: %v", err)
	}
	sh(t, dir, "for i in $(seq 1 30); do echo $i > gen/f$i; done")
	_, _, err := r.Squash(ctx, dir, start, "a: generated", "")
	var tm *TooManyFilesError
	if !errors.As(err, &tm) || tm.Files != 33 || tm.Max != 20 || !strings.Contains(err.Error(), "max_files") {
		t.Errorf("squash = %v, want a TooManyFilesError of 33 files", err)
	}
}

// A file larger than the object cache reads whole, and than a pipe's
// buffer, goes through the whole chain: committed, moved into the
// workspace (streamed from cat-file), and checked out into a copy of a
// later commit, all byte for byte.
func TestLargeFileStreamsThroughTheChain(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	r.SetPool(filepath.Join(t.TempDir(), "pool"), 2)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	for i := 0; i < len(big); i += 4096 {
		big[i] = byte(i >> 12)
	}
	dir, c := attempt(t, r, start, "a", func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if err := r.Advance(ctx, start, c); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the workspace's big.bin: %d bytes, %v; want the task's %d", len(got), err, len(big))
	}
	if err := r.RemoveCopy(dir); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(t.TempDir(), "b")
	if err := r.NewCopy(ctx, next, c); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(next, "big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the next copy's big.bin: %d bytes, %v", len(got), err)
	}
	if st := gitStatus(t, next); st != "" {
		t.Errorf("the next copy is not its commit: %q", st)
	}
	sh(t, ws, "git fsck --no-dangling")
}
