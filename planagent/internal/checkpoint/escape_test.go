package checkpoint

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/checkpoint/hostile"
)

// Each escape of the audit, left in an attempt's copy as an agent would
// leave it, then everything the host does with copies: commit it, merge it,
// move the workspace, throw it into the pool, take it back for the next
// attempt, commit that one, drain the pool. No program may run on the host
// (the marker), the user's repository must be intact (fsck, hooks, config,
// branch), and the attempt must end cleanly or with a named error.
func TestHostileCopyRunsNothingOnTheHost(t *testing.T) {
	t.Parallel()
	for m, mode := range []string{"git", "shadow"} {
		for i, p := range hostile.All {
			t.Run(mode+"/"+p.Name, func(t *testing.T) {
				// -short tries each payload in one mode, alternating, so
				// both modes and every payload are still covered.
				if testing.Short() && (i+m)%2 == 1 {
					t.Skip("slow: the payload is tried in the other mode under -short (make test runs both)")
				}
				t.Parallel()
				hostileAttempt(t, mode, p)
			})
		}
	}
}

// guarded is a user's repository (git mode) or workspace (shadow mode) with
// a hook and a config of theirs that must come through unchanged.
type guarded struct {
	ws, gitDir     string
	hook, config   string
	hookPath, conf string
}

func guardedRepo(t *testing.T, mode string) (*Repo, guarded) {
	t.Helper()
	var ws string
	var r *Repo
	if mode == "git" {
		ws = userRepo(t)
		write(t, ws, ".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n")
		sh(t, ws, "git config --local user.note kept")
		r = open(t, ws)
	} else {
		ws = t.TempDir()
		write(t, ws, "notes.txt", "one\ntwo\nthree\n")
		var err error
		if r, err = Open(t.Context(), ws, filepath.Join(t.TempDir(), "shadow.git"), nil); err != nil {
			t.Fatal(err)
		}
		write(t, r.GitDir(), "hooks/pre-commit", "#!/bin/sh\nexit 0\n")
	}
	g := guarded{ws: ws, gitDir: r.GitDir(), hookPath: filepath.Join(r.GitDir(), "hooks", "pre-commit"), conf: filepath.Join(r.GitDir(), "config")}
	g.hook, g.config = readOrEmpty(g.hookPath), readOrEmpty(g.conf)
	return r, g
}

func readOrEmpty(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// check asserts that nothing ran on the host and the repository is intact.
func (g guarded) check(t *testing.T, marker string) {
	t.Helper()
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("a program of the agent's ran on the host: %s exists", marker)
	}
	if got := readOrEmpty(g.hookPath); got != g.hook {
		t.Errorf("the user's hook changed: %q", got)
	}
	if got := readOrEmpty(g.conf); got != g.config {
		t.Errorf("the repository's config changed:\n%s\nwas\n%s", got, g.config)
	}
	c := exec.Command("git", "--git-dir="+g.gitDir, "fsck", "--strict", "--no-dangling")
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	if ref, err := exec.Command("git", "--git-dir="+g.gitDir, "symbolic-ref", "-q", "HEAD").Output(); err != nil || !strings.HasPrefix(string(ref), "refs/heads/") {
		t.Errorf("HEAD is no longer on its branch: %q %v", ref, err)
	}
}

func hostileAttempt(t *testing.T, mode string, p hostile.Payload) {
	r, g := guardedRepo(t, mode)
	marker := filepath.Join(t.TempDir(), "pwned")
	r.SetPool(filepath.Join(t.TempDir(), "pool"), 2)
	// A FIFO the host opened would block it for good: the whole sequence
	// must end well within this.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		hostileSequence(t, ctx, r, p.For(marker, g.gitDir))
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the host hung on the copy (a FIFO opened?)")
	}
	g.check(t, marker)
}

func hostileSequence(t *testing.T, ctx context.Context, r *Repo, script string) {
	start, err := r.Head(ctx)
	if err != nil {
		t.Error(err)
		return
	}
	copies := t.TempDir()
	dir := filepath.Join(copies, "a.1")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Errorf("first copy: %v", err)
		return
	}
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("the payload: %v\n%s", err, out)
		return
	}
	head := start
	commit, _, err := r.Squash(ctx, dir, start, "a: hostile", "")
	if err != nil {
		t.Logf("squash refused the copy: %v", err) // a named error is an acceptable end
	} else if commit != start {
		m, err := r.Apply(ctx, dir, start, commit, start)
		if err == nil {
			err = r.Advance(ctx, start, m)
		}
		if err != nil {
			t.Errorf("merge: %v", err)
			return
		}
		head = m
	}
	if err := r.RemoveCopy(dir); err != nil {
		t.Errorf("throw the copy away: %v", err)
	}
	// The next attempt takes the copy the payload is in from the pool.
	next := filepath.Join(copies, "b.1")
	if err := r.NewCopy(ctx, next, head); err != nil {
		t.Errorf("the next copy: %v", err)
		return
	}
	if _, err := os.Lstat(filepath.Join(next, ".git", "commondir")); err == nil {
		t.Error("the recycled copy kept the agent's .git/commondir")
	}
	if st := gitStatus(t, next); st != "" {
		t.Errorf("the recycled copy is not exactly its commit: %q", st)
	}
	if out, err := exec.Command("git", "-C", next, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck in the recycled copy: %v\n%s", err, out)
	}
	if c, _, err := r.Squash(ctx, next, head, "b: nothing", ""); err != nil || c != head {
		t.Errorf("squash of the untouched recycled copy = %s, %v; want its base", c, err)
	}
	if err := r.RemoveCopy(next); err != nil {
		t.Errorf("throw the next copy away: %v", err)
	}
	if err := r.DrainPool(); err != nil {
		t.Errorf("drain the pool: %v", err)
	}
}

func gitStatus(t *testing.T, dir string) string {
	t.Helper()
	c := exec.Command("git", "status", "--porcelain", "--ignored")
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		return "git status: " + err.Error() + ": " + string(out)
	}
	return strings.TrimSpace(string(out))
}

// A task that writes inside a submodule gets a named error, not a
// completion that silently drops the writes.
func TestWriteInsideASubmoduleIsANamedError(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	sub := sh(t, ws, "mkdir lib && cd lib && git init -q && git -c user.name=U -c user.email=u@e commit -q --allow-empty -m sub && git rev-parse HEAD")
	sh(t, ws, "git update-index --add --cacheinfo 160000,"+sub+",lib && git commit -q -m 'add lib'")
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "lib/new.go", "package lib\n")
	_, _, err := r.Squash(ctx, dir, start, "a: x", "")
	var se *SubmoduleError
	if !errors.As(err, &se) || strings.Join(se.Paths, ",") != "lib" || !strings.Contains(err.Error(), "submodule lib") {
		t.Fatalf("squash = %v, want a SubmoduleError naming lib", err)
	}
}

// A nested repository's files are committed as plain files, and what was
// removed is named.
func TestNestedRepositoryIsCommittedAsFiles(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, _ = attempt(t, r, start, "warm", func(string) {})
	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "mkdir vendored && cd vendored && git init -q && echo x > x.txt && git add x.txt && git -c user.name=a -c user.email=a@b commit -qm x && mkfifo ../pipe")
	c, removed, err := r.Squash(ctx, dir, start, "a: vendor", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sh(t, ws, withPending(r)+"git ls-tree -r --name-only "+c); !strings.Contains(got, "vendored/x.txt") || strings.Contains(got, ".git/") || strings.Contains(got, "pipe") {
		t.Errorf("the commit holds:\n%s", got)
	}
	if len(removed) != 2 || !strings.Contains(strings.Join(removed, "|"), "vendored/.git") || !strings.Contains(strings.Join(removed, "|"), "pipe") {
		t.Errorf("removed = %q, want vendored/.git and pipe named", removed)
	}
}

// A directory replaced by a file or a link merges into the workspace, and
// back.
func TestDirectoryBecomesAFileOrALink(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	for _, replace := range []string{"rm -rf lib && echo now-a-file > lib", "rm -rf lib && ln -s notes.txt lib"} {
		t.Run(replace, func(t *testing.T) {
			ws := userRepo(t)
			write(t, ws, "lib/a.txt", "a\n")
			write(t, ws, "lib/deep/b.txt", "b\n")
			sh(t, ws, "git add -A && git commit -q -m lib")
			r := open(t, ws)
			ctx := t.Context()
			start, _ := r.Head(ctx)
			_, c := attempt(t, r, start, "a", func(dir string) { sh(t, dir, replace) })
			if err := r.Advance(ctx, start, c); err != nil {
				t.Fatalf("advance: %v", err)
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" {
				t.Errorf("status after the move: %q", st)
			}
			if err := r.Advance(ctx, c, start); err != nil {
				t.Fatalf("advance back: %v", err)
			}
			if read(t, ws, "lib/deep/b.txt") != "b\n" {
				t.Error("the directory did not come back")
			}
		})
	}
}

// A path under a link in the workspace is never written through the link.
func TestAdvanceNeverWritesThroughALink(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, c := attempt(t, r, start, "a", func(dir string) { write(t, dir, "out/x.txt", "x\n") })
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	sh(t, ws, "echo out >> .git/info/exclude")
	err := r.Advance(ctx, start, c)
	if err == nil || !strings.Contains(err.Error(), "is a link") {
		t.Errorf("advance = %v, want a refusal naming the link", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Error("a file was written through the link")
	}
}

// An edit of the same size made in the same second as the copy's checkout
// (racily clean for git) still reaches the squash: the saved index keeps
// its mtime, so git re-reads such files.
func TestSquashSeesASameSizeEditRightAfterTheCopy(t *testing.T) {
	gitHeavy(t)
	ws := userRepo(t)
	r := open(t, ws)
	r.SetPool(filepath.Join(t.TempDir(), "pool"), 2)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	for i := range 10 {
		dir := filepath.Join(t.TempDir(), "c")
		if err := r.NewCopy(ctx, dir, start); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "notes.txt", "one\nTWO\nthree\n") // same size as "two"
		c, _, err := r.Squash(ctx, dir, start, "x: y", "")
		if err != nil {
			t.Fatal(err)
		}
		if c == start {
			t.Fatalf("round %d: the edit was not seen (squash = base)", i)
		}
		if err := r.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
	}
}
