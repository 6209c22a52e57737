package checkpoint

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// userRepo makes a git repository as a user has one: a commit with a
// tracked file, a .gitignore, the user's own identity.
//
// Each test gets a copy of one template (fixture_test.go) when git's
// environment is the one the template was made under, else a repository
// made afresh.
func userRepo(t *testing.T) string {
	t.Helper()
	if dir := copyOfUserRepo(t); dir != "" {
		return dir
	}
	dir := t.TempDir()
	sh(t, dir, "git init -q -b main && git config user.name U && git config user.email u@example.com")
	write(t, dir, "notes.txt", "one\ntwo\nthree\n")
	write(t, dir, ".gitignore", "build/\n")
	write(t, dir, "héllo wörld.txt", "unicode\n")
	sh(t, dir, "git add -A && git commit -q -m 'the user commit'")
	return dir
}

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func open(t *testing.T, ws string) *Repo {
	t.Helper()
	r, err := Open(t.Context(), ws, filepath.Join(t.TempDir(), "shadow.git"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// withPending is a shell prefix that has the git commands after it read
// the objects of the tasks not moved to yet, as planagent's own git does:
// a task's commit enters the repository only when the branch moves to it.
func withPending(r *Repo) string {
	return "export GIT_ALTERNATE_OBJECT_DIRECTORIES='" + r.pending.dir + "' && "
}

// attempt makes a copy at base, lets edit change it, and squashes it.
func attempt(t *testing.T, r *Repo, base, id string, edit func(dir string)) (dir, commit string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), id)
	if err := r.NewCopy(t.Context(), dir, base); err != nil {
		t.Fatal(err)
	}
	edit(dir)
	commit, _, err := r.Squash(t.Context(), dir, base, id+": do "+id, "what "+id+" did")
	if err != nil {
		t.Fatal(err)
	}
	// Merges the commit onto its own base: itself.
	if c, err := r.Apply(t.Context(), dir, base, commit, base); err != nil || c != commit {
		t.Fatalf("apply onto its base: %s %v", c, err)
	}
	return dir, commit
}

func TestGitModeCheckpointsAndIsolation(t *testing.T) {
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	if r.Mode() != "git" || r.Branch() != "main" {
		t.Fatalf("mode %s branch %s", r.Mode(), r.Branch())
	}
	ctx := t.Context()
	start, _ := r.Head(ctx)

	// Two independent attempts from the same base, merged in completion order.
	dirA, a := attempt(t, r, start, "a", func(dir string) {
		write(t, dir, "a.txt", "from a\n")
		write(t, dir, "build/out.bin", "shell-made, ignored\n") // never committed
		sh(t, dir, "git add a.txt && git commit -q -m 'the agent commits too'")
		write(t, dir, "scratch.txt", "shell-made, untracked\n") // committed: not ignored
	})
	dirB, b := attempt(t, r, start, "b", func(dir string) { write(t, dir, "dir with space/b.txt", "from b\n") })

	mb, err := r.Apply(ctx, dirB, start, b, start)
	if err != nil || mb != b {
		t.Fatalf("apply b onto its own base: %s %v", mb, err)
	}
	if err := r.Advance(ctx, start, mb); err != nil {
		t.Fatal(err)
	}
	ma, err := r.Apply(ctx, dirA, start, a, mb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, mb, ma); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dirA, dirB} {
		if err := r.RemoveCopy(d); err != nil {
			t.Fatal(err)
		}
	}

	log := sh(t, ws, "git log --format=%s")
	if want := "a: do a\nb: do b\nthe user commit"; log != want {
		t.Errorf("history:\n%s\nwant\n%s", log, want)
	}
	if body := sh(t, ws, "git log -1 --format=%b"); body != "what a did" {
		t.Errorf("body %q", body)
	}
	if got := read(t, ws, "a.txt") + read(t, ws, "dir with space/b.txt") + read(t, ws, "scratch.txt"); got != "from a\nfrom b\nshell-made, untracked\n" {
		t.Errorf("workspace files: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); !os.IsNotExist(err) {
		t.Errorf("an ignored shell-made file reached the workspace: %v", err)
	}
	if dirty, _ := r.Dirty(ctx); len(dirty) != 0 {
		t.Errorf("workspace dirty after the moves: %v", dirty)
	}
	if st := sh(t, ws, "git status --porcelain"); st != "" {
		t.Errorf("git status: %s", st)
	}
	if d, err := r.Diff(ctx, start, ma); err != nil || !strings.Contains(d, "+from a") || !strings.Contains(d, "+from b") {
		t.Errorf("diff: %v\n%s", err, d)
	}
}

func TestDirty(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	vol := filepath.Join(ws, "volumes")
	write(t, vol, "reports/x.md", "planagent's own files\n")
	r, err := Open(t.Context(), ws, filepath.Join(vol, "runs/shadow.git"), []string{vol})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := r.Dirty(t.Context()); len(d) != 0 {
		t.Fatalf("clean tree (volumes excluded) dirty: %v", d)
	}
	write(t, ws, "notes.txt", "changed\n")
	write(t, ws, "new file.txt", "untracked\n")
	write(t, ws, "build/ignored", "ignored\n")
	d, err := r.Dirty(t.Context())
	if want := []string{"new file.txt", "notes.txt"}; err != nil || !reflect.DeepEqual(d, want) {
		t.Errorf("dirty = %q %v, want %q", d, err, want)
	}
}

func TestConflict(t *testing.T) {
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "notes.txt", "one\nTWO by a\nthree\n") })
	dirB, b := attempt(t, r, start, "b", func(dir string) { write(t, dir, "notes.txt", "one\nTWO by b\nthree\n") })
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	_, err := r.Apply(ctx, dirB, start, b, a)
	var ce *ConflictError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Files, []string{"notes.txt"}) {
		t.Fatalf("apply = %v, want a conflict in notes.txt", err)
	}
	if head, _ := r.Head(ctx); head != a || read(t, ws, "notes.txt") != "one\nTWO by a\nthree\n" {
		t.Errorf("a conflict changed the integration state")
	}
}

func TestAdvanceNeverOverwritesTheUsersWork(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "notes.txt", "by the agent\n") })
	write(t, ws, "notes.txt", "the user's edit during the run\n")
	err := r.Advance(ctx, start, a)
	var ce *ChangedError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Files, []string{"notes.txt"}) {
		t.Fatalf("advance = %v, want it refused naming notes.txt", err)
	}
	if read(t, ws, "notes.txt") != "the user's edit during the run\n" {
		t.Error("the user's edit was overwritten")
	}
	if head, _ := r.Head(ctx); head != start {
		t.Error("the branch moved")
	}
}

// moveEdits is a task's edit for the move tests: a file changed, one
// added, one removed.
func moveEdits(t *testing.T) func(dir string) {
	return func(dir string) {
		write(t, dir, "notes.txt", "new notes\n")
		write(t, dir, "x.txt", "x\n")
		if err := os.Remove(filepath.Join(dir, "héllo wörld.txt")); err != nil {
			t.Fatal(err)
		}
	}
}

// A move cut short (some files written, the branch not moved; or the
// branch moved, the index not) is finished by running it again.
func TestAdvanceFinishesAnInterruptedMove(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, a := attempt(t, r, start, "a", moveEdits(t))
	write(t, ws, "notes.txt", "new notes\n") // the crash came after this file
	write(t, ws, "x.txt", "")                // and while git wrote this one
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, start, a); err != nil { // once more, HEAD already there
		t.Fatal(err)
	}
	if st := sh(t, ws, "git status --porcelain"); st != "" || read(t, ws, "x.txt") != "x\n" {
		t.Errorf("after the redone move: status %q", st)
	}
	if _, err := os.Stat(filepath.Join(ws, "héllo wörld.txt")); !os.IsNotExist(err) {
		t.Error("a file the task deleted is still there")
	}
}

// A move that cannot update the index or move the branch (another git
// command holds its lock) is put back: HEAD, the index and the files stay
// where the caller recorded them (the two are written at once, so either
// goes back when the other fails), and the same move succeeds once the
// lock is gone.
func TestAdvanceWithALockTakenMovesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, lock, want string }{
		{"index", ".git/index.lock", "index"},
		{"branch", ".git/refs/heads/main.lock", "move main"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := userRepo(t)
			r := open(t, ws)
			ctx := t.Context()
			start, _ := r.Head(ctx)
			_, a := attempt(t, r, start, "a", moveEdits(t))
			write(t, ws, c.lock, "")
			if err := r.Advance(ctx, start, a); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("advance with %s taken = %v, want an error naming %q", c.lock, err, c.want)
			}
			if head, _ := r.Head(ctx); head != start {
				t.Errorf("HEAD moved to %s although the move failed", head)
			}
			os.Remove(filepath.Join(ws, c.lock))
			if st := sh(t, ws, "git status --porcelain"); st != "" || read(t, ws, "notes.txt") != "one\ntwo\nthree\n" {
				t.Errorf("after the failed move: status %q, notes %q", st, read(t, ws, "notes.txt"))
			}
			if staged := sh(t, ws, "git diff --cached --name-status"); staged != "" {
				t.Errorf("the index kept the move's entries:\n%s", staged)
			}
			if err := r.Advance(ctx, start, a); err != nil {
				t.Fatal(err)
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" || read(t, ws, "x.txt") != "x\n" {
				t.Errorf("after the move: status %q", st)
			}
		})
	}
}

// Killed after the branch moved but before the index did: the redo (HEAD
// already at the target) brings the files and the index there too.
func TestAdvanceRedoneAfterTheBranchMoved(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "x.txt", "x\n") })
	// As the move leaves it: the task's objects brought in are the redo's
	// to bring in here, as the branch names them already.
	sh(t, ws, withPending(r)+"git update-ref refs/heads/main "+a)
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	if st := sh(t, ws, "git status --porcelain"); st != "" || read(t, ws, "x.txt") != "x\n" {
		t.Errorf("after the redo: status %q", st)
	}
}

func TestRollback(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "a.txt", "the user changed it\n")
	var ce *ChangedError
	if err := r.Rollback(ctx, start); !errors.As(err, &ce) || ce.Files[0] != "a.txt" {
		t.Fatalf("rollback over a change = %v, want refused naming a.txt", err)
	}
	sh(t, ws, "git checkout -q -- a.txt")
	if err := r.Rollback(ctx, start); err != nil {
		t.Fatal(err)
	}
	if head, _ := r.Head(ctx); head != start {
		t.Error("not back at the start")
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Error("the task's file is still there")
	}
	if got := sh(t, ws, "git rev-parse refs/codeagent/rollback/"+a); got != a {
		t.Errorf("the rolled-back commit is not kept: %s", got)
	}
}

func TestShadowMode(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := t.TempDir()
	write(t, ws, "main.py", "print('hi')\n")
	shadow := filepath.Join(t.TempDir(), "shadow.git")
	r, err := Open(t.Context(), ws, shadow, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode() != "shadow" {
		t.Fatalf("mode %s", r.Mode())
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); !os.IsNotExist(err) {
		t.Fatal("the workspace got a .git")
	}
	ctx := t.Context()
	start, _ := r.Head(ctx)
	dir, a := attempt(t, r, start, "a", func(dir string) {
		write(t, dir, "main.py", "print('hello')\n")
		if st := sh(t, dir, "git status --short"); st != "M main.py" { // git works in the copy
			t.Errorf("git status in the copy: %q", st)
		}
	})
	m, err := r.Apply(ctx, dir, start, a, start)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advance(ctx, start, m); err != nil {
		t.Fatal(err)
	}
	if read(t, ws, "main.py") != "print('hello')\n" {
		t.Error("the workspace does not show the task's change")
	}
	// The next run's start keeps what the user changed in between.
	write(t, ws, "main.py", "print('user')\n")
	r2, err := Open(t.Context(), ws, shadow, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := r2.Dirty(ctx); !reflect.DeepEqual(d, []string{"main.py"}) {
		t.Errorf("dirty before the snapshot: %v", d)
	}
	if err := r2.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := r2.Dirty(ctx); len(d) != 0 {
		t.Errorf("dirty after the second open: %v", d)
	}
	if h, _ := r2.Head(ctx); h == m {
		t.Error("the user's change between runs was not snapshotted")
	}
}

func TestUnchangedAttemptSquashesToItsBase(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	start, _ := r.Head(t.Context())
	_, c := attempt(t, r, start, "noop", func(string) {})
	if c != start {
		t.Errorf("squash of an unchanged copy = %s, want the base", c)
	}
}

// A copy thrown into the pool comes back as an exact copy of the commit
// asked for: no file, ignored file, config or hook of the attempt before.
func TestPooledCopyIsExact(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	r.SetPool(filepath.Join(t.TempDir(), "pool"), 2)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	dir1, a := attempt(t, r, start, "a", func(dir string) {
		write(t, dir, "a.txt", "a\n")
		write(t, dir, "build/junk", "ignored junk\n")
		write(t, dir, "notes.txt", "scribbled\n")
		write(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n")
		sh(t, dir, "git config filter.evil.clean 'touch "+filepath.Join(dir, "evil-ran")+"; cat'")
		write(t, dir, ".gitattributes", "*.txt filter=evil\n")
	})
	if err := r.RemoveCopy(dir1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir1); !os.IsNotExist(err) {
		t.Fatal("the copy is still at its place")
	}
	dir2 := filepath.Join(t.TempDir(), "b")
	if err := r.NewCopy(ctx, dir2, a); err != nil {
		t.Fatal(err)
	}
	if read(t, dir2, "a.txt") != "a\n" || read(t, dir2, "notes.txt") != "scribbled\n" {
		t.Error("the pooled copy is not at the commit asked for")
	}
	for _, gone := range []string{"build/junk", ".git/hooks/pre-commit", "evil-ran"} {
		if _, err := os.Stat(filepath.Join(dir2, gone)); !os.IsNotExist(err) {
			t.Errorf("%s survived into the next copy", gone)
		}
	}
	if out := sh(t, dir2, "git config --get filter.evil.clean || true"); out != "" {
		t.Errorf("the copy's config kept %q", out)
	}
	if files := sh(t, ws, withPending(r)+"git ls-tree -r --name-only "+a); strings.Contains(files, ".git/") {
		t.Errorf("the commit holds git metadata:\n%s", files)
	}
	if st := sh(t, dir2, "git status --porcelain"); st != "" {
		t.Errorf("git status in the copy: %q", st)
	}
}

// pooledRepo is a user's repository with a pool of up to max copies, the
// pool's directory and the repository's HEAD.
func pooledRepo(t *testing.T, max int) (r *Repo, pool, head string) {
	t.Helper()
	r = open(t, userRepo(t))
	pool = filepath.Join(t.TempDir(), "pool")
	r.SetPool(pool, max)
	head, err := r.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r, pool, head
}

// Prewarm fills the pool with checked-out copies until it is full; the
// attempts then take them (no clone, no full checkout) and get exact copies
// of the commit they ask for, even one the copies were not made at.
func TestPrewarmFillsThePool(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	r, pool, start := pooledRepo(t, 3)
	ctx := t.Context()
	n, err := r.Prewarm(ctx, start)
	if err != nil || n != 3 {
		t.Fatalf("Prewarm = %d, %v; want 3 copies", n, err)
	}
	if entries, _ := os.ReadDir(pool); len(entries) != 3 {
		t.Fatalf("pool holds %d copies, want 3", len(entries))
	}
	if _, err := os.Stat(pool + ".staging"); !os.IsNotExist(err) {
		t.Errorf("the staging dir is left: %v", err)
	}
	if n, err := r.Prewarm(ctx, start); err != nil || n != 0 {
		t.Errorf("Prewarm of a full pool = %d, %v; want none", n, err)
	}
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	if entries, _ := os.ReadDir(pool); len(entries) != 2 {
		t.Fatalf("pool holds %d copies after an attempt took one, want 2", len(entries))
	}
	dir := filepath.Join(t.TempDir(), "b")
	if err := r.NewCopy(ctx, dir, a); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(pool); len(entries) != 1 {
		t.Errorf("pool holds %d copies, want 1: the copy did not come from it", len(entries))
	}
	if read(t, dir, "a.txt") != "a\n" || read(t, dir, "notes.txt") != "one\ntwo\nthree\n" {
		t.Error("the copy taken from the pool is not at the commit asked for")
	}
	if st := sh(t, dir, "git status --porcelain"); st != "" {
		t.Errorf("git status in the copy: %q", st)
	}
}

// Prewarm stops when its context ends, leaving no half-made copy.
func TestPrewarmStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	r, pool, start := pooledRepo(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if n, err := r.Prewarm(ctx, start); err != nil || n != 0 {
		t.Errorf("Prewarm after cancel = %d, %v; want none, no error", n, err)
	}
	if entries, _ := os.ReadDir(pool); len(entries) != 0 {
		t.Errorf("pool holds %d copies", len(entries))
	}
	if _, err := os.Stat(pool + ".staging"); !os.IsNotExist(err) {
		t.Errorf("the staging dir is left: %v", err)
	}
	// What a Prewarm killed with planagent left is gone with the pool.
	write(t, pool+".staging", "1-0/.git/HEAD", "ref: refs/heads/main\n")
	if err := r.DrainPool(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pool + ".staging"); !os.IsNotExist(err) {
		t.Errorf("DrainPool left the staging dir: %v", err)
	}
}
