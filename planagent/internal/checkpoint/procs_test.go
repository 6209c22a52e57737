package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitCounter puts a git in front of PATH that logs each run, and returns
// a function that says how many runs there were since it was last called.
// Not parallel: it sets PATH.
func gitCounter(t *testing.T) func() int {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "log")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	seen := 0
	return func() int {
		data, _ := os.ReadFile(log)
		lines := strings.Count(string(data), "\n")
		n := lines - seen
		seen = lines
		return n
	}
}

// TestChainTaskGitProcesses bounds the git processes of one task of a
// chain, step by step, once the run is under way (the pool and the object
// cache warm): each process costs milliseconds, and a step that gains one
// shows here before it shows in the benchmarks.
func TestChainTaskGitProcesses(t *testing.T) {
	gitHeavy(t)
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	copies := t.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 2)
	count := gitCounter(t)
	for i, name := range []string{"a.txt", "b.txt", "c.txt"} {
		dir := filepath.Join(copies, name)
		count()
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		copyProcs := count()
		write(t, dir, name, name+"\n")
		commit, _, err := r.Squash(ctx, dir, head, "write "+name, "")
		if err != nil {
			t.Fatal(err)
		}
		squashProcs := count()
		if _, err := r.Apply(ctx, dir, head, commit, head); err != nil {
			t.Fatal(err)
		}
		if err := r.NewCopy(ctx, dir+".accept", commit); err != nil {
			t.Fatal(err)
		}
		acceptProcs := count()
		if err := r.RemoveCopy(dir + ".accept"); err != nil {
			t.Fatal(err)
		}
		if err := r.Advance(ctx, head, commit); err != nil {
			t.Fatal(err)
		}
		moveProcs := count()
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
		head = commit
		if i == 0 {
			continue // the first copies are made by git init, the cache filled
		}
		for _, c := range []struct {
			step     string
			got, max int
		}{
			// none: the pooled copy made at this commit (the acceptance
			// copy before) is checked out here (checkoutCopy), and what
			// git does not track removed here, from the index
			{"the attempt's copy", copyProcs, 0},
			// add (no submodule listing: base was made here from one
			// without; base's tree read by the long-lived cat-file; the
			// trees written here from the index add made, the commit
			// and the keep ref too)
			{"the squash", squashProcs, 1},
			// none: checked out here too, from the pooled copy of the
			// task before (the squash put its objects into the object
			// cache as a pack of its own)
			{"the acceptance copy", acceptProcs, 0},
			// read-tree (the files and the index, by git), update-ref
			// (the branch and the commit's keep ref, one transaction;
			// HEAD and the trees read by the long-lived cat-file)
			{"the move", moveProcs, 2},
		} {
			if c.got > c.max {
				t.Errorf("task %d: %s ran %d git processes, want at most %d", i, c.step, c.got, c.max)
			}
		}
	}
	if got := read(t, ws, "c.txt"); got != "c.txt\n" {
		t.Errorf("c.txt = %q", got)
	}
	if out := sh(t, ws, "git status --porcelain"); out != "" {
		t.Errorf("the workspace is not at the last checkpoint:\n%s", out)
	}
}

// TestFanOutMergeGitProcesses bounds the git processes of a fan-out's
// second merge, onto a head that moved since its copy: the merge (log is
// not needed, the squash's message is remembered) and its acceptance copy,
// whose objects the merge put into the object cache.
func TestFanOutMergeGitProcesses(t *testing.T) {
	gitHeavy(t)
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	copies := t.TempDir()
	r.SetPool(filepath.Join(copies, ".pool"), 3)
	count := gitCounter(t)
	var commits []string
	for _, name := range []string{"a.txt", "b.txt"} {
		dir := filepath.Join(copies, name)
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		write(t, dir, name, name+"\n")
		c, _, err := r.Squash(ctx, dir, head, "write "+name, "")
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c)
	}
	if err := r.Advance(ctx, head, commits[0]); err != nil {
		t.Fatal(err)
	}
	count()
	merged, err := r.Apply(ctx, filepath.Join(copies, "b.txt"), head, commits[1], commits[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := count(); got > 1 {
		t.Errorf("the merge onto the moved head ran %d git processes, want at most 1 (merge-tree; the commit written here)", got)
	}
	accept := filepath.Join(copies, "b.accept")
	if err := r.NewCopy(ctx, accept, merged); err != nil {
		t.Fatal(err)
	}
	if got := count(); got > 1 {
		t.Errorf("the acceptance copy of the merge ran %d git processes, want at most 1 (checkout)", got)
	}
	if got := read(t, accept, "a.txt") + read(t, accept, "b.txt"); got != "a.txt\nb.txt\n" {
		t.Errorf("the acceptance copy holds %q", got)
	}
	if out, err := exec.Command("git", "-C", accept, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck in the acceptance copy: %v\n%s", err, out)
	}
	if err := r.Advance(ctx, commits[0], merged); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, ws, "git fsck --no-dangling && git status --porcelain"); out != "" {
		t.Errorf("the workspace after the merge:\n%s", out)
	}
}

// TestFirstTaskGitProcesses pins the git processes of a run's start, cold:
// the repository opened, the first attempt's copy made (no pooled copy,
// no object cache yet), its checkpoint (the squash), the move to it, and
// a second task of the same base merged onto the moved head. Each step's
// sequence is in its comment: a step that gains a process fails here.
func TestFirstTaskGitProcesses(t *testing.T) {
	ws := userRepo(t)
	ctx := t.Context()
	copies := t.TempDir()
	count := gitCounter(t)
	r := open(t, ws)
	openProcs := count()
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.SetPool(filepath.Join(copies, ".pool"), 2)
	count()
	var dirs, commits []string
	var copyProcs, squashProcs []int
	for _, name := range []string{"a.txt", "b.txt"} {
		dir := filepath.Join(copies, name)
		if err := r.NewCopy(ctx, dir, head); err != nil {
			t.Fatal(err)
		}
		copyProcs = append(copyProcs, count())
		write(t, dir, name, name+"\n")
		c, _, err := r.Squash(ctx, dir, head, "write "+name, "")
		if err != nil {
			t.Fatal(err)
		}
		squashProcs = append(squashProcs, count())
		dirs, commits = append(dirs, dir), append(commits, c)
	}
	if err := r.Advance(ctx, head, commits[0]); err != nil {
		t.Fatal(err)
	}
	moveProcs := count()
	merged, err := r.Apply(ctx, dirs[1], head, commits[1], commits[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, commits[0], merged); err != nil {
		t.Fatal(err)
	}
	mergeProcs := count()
	for _, c := range []struct {
		step     string
		got, max int
	}{
		// rev-parse (where the repository is, and HEAD)
		{"Open", openProcs, 1},
		// update-ref (the keep ref of the start), git init (the copy's
		// .git, reflog off by its template's config), git init (the
		// object cache), pack-objects (the start's objects into it),
		// config (the user's filters, excludes, line endings: read on
		// first use), checkout; the cat-file --batch Head started reads
		// the rest
		{"the first copy", copyProcs[0], 6},
		// ls-tree (the start's submodules: none, remembered), add (the
		// trees and commit written here)
		{"the first squash", squashProcs[0], 2},
		// checkout (.git written here as the first's was; its objects
		// copied from the cache)
		{"the second copy", copyProcs[1], 1},
		// add
		{"the second squash", squashProcs[1], 1},
		// read-tree (the files and the index), update-ref (the branch and
		// the commit's keep ref, one transaction)
		{"the move", moveProcs, 2},
		// merge-tree; read-tree, update-ref
		{"the merge and its move", mergeProcs, 3},
	} {
		if c.got > c.max {
			t.Errorf("%s ran %d git processes, want at most %d", c.step, c.got, c.max)
		} else {
			t.Logf("%s: %d git processes", c.step, c.got)
		}
	}
	if got := read(t, ws, "a.txt") + read(t, ws, "b.txt"); got != "a.txt\nb.txt\n" {
		t.Errorf("the workspace holds %q", got)
	}
	if out := sh(t, ws, "git status --porcelain"); out != "" {
		t.Errorf("the workspace is not at the merge:\n%s", out)
	}
}
