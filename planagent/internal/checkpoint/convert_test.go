package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rot13 stands in for git-crypt: a clean filter that changes what is
// stored, its smudge the inverse.
const rot13 = "tr a-zA-Z n-za-mN-ZA-M"

// isolatedGlobal points git at a global config file of the test's (and
// away from the machine's), and returns its path. Not parallel.
func isolatedGlobal(t *testing.T) string {
	t.Helper()
	global := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(global, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	return global
}

// gitCheckout is what `git checkout` of commit writes for path in the
// repository ws, with the user's config and attributes: in a worktree of
// its own.
func gitCheckout(t *testing.T, ws, commit, path string) string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "wt")
	sh(t, ws, "git worktree add -q --detach '"+tmp+"' "+commit)
	defer sh(t, ws, "git worktree remove --force '"+tmp+"'")
	return read(t, tmp, path)
}

// The user's filter drivers, in their global or their repository's
// config, clean what a task wrote as the user's own git add would (a
// secret is committed as git-crypt would store it, never in plaintext),
// the copy shows the task the smudged file, and the move writes the
// workspace as git checkout does: the status is clean after it.
func TestTheUsersFiltersRun(t *testing.T) {
	gitHeavy(t)
	for _, where := range []string{"global", "repository"} {
		t.Run(where, func(t *testing.T) {
			global := isolatedGlobal(t)
			ws := userRepo(t)
			config := "git config"
			if where == "global" {
				config = "git config --file '" + global + "'"
			}
			sh(t, ws, config+" filter.rot.clean '"+rot13+"' && "+config+" filter.rot.smudge '"+rot13+"' && "+config+" filter.rot.required true")
			write(t, ws, ".gitattributes", "*.secret filter=rot\n")
			write(t, ws, "a.secret", "the old secret\n")
			sh(t, ws, "git add -A && git commit -q -m secrets")
			r := open(t, ws)
			r.SetPool(filepath.Join(t.TempDir(), "pool"), 2)
			ctx := t.Context()
			start, _ := r.Head(ctx)
			dirA, commit := attempt(t, r, start, "a", func(dir string) {
				if got := read(t, dir, "a.secret"); got != "the old secret\n" {
					t.Errorf("the copy holds %q, want the smudged file", got)
				}
				write(t, dir, "a.secret", "the new secret\n")
				write(t, dir, "b.secret", "another secret\n")
			})
			for path, content := range map[string]string{"a.secret": "the new secret\n", "b.secret": "another secret\n"} {
				got := sh(t, ws, withPending(r)+"git rev-parse "+commit+":"+path)
				want := sh(t, ws, "printf '"+strings.TrimSuffix(content, "\n")+"\\n' | git hash-object --stdin --path="+path)
				if got != want {
					t.Errorf("%s: committed blob %s, want %s (what git add stores)\n%s", path, got, want,
						sh(t, ws, withPending(r)+"git cat-file -p "+got))
				}
			}
			if err := r.Advance(ctx, start, commit); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"a.secret", "b.secret"} {
				if got, want := read(t, ws, path), gitCheckout(t, ws, commit, path); got != want {
					t.Errorf("%s in the workspace: %q, git checkout writes %q", path, got, want)
				}
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" {
				t.Errorf("status after the move: %q", st)
			}
			// The next task's copy, recycled from the pool, is smudged too.
			if err := r.RecycleCopy(ctx, dirA, commit); err != nil {
				t.Fatal(err)
			}
			_, next := attempt(t, r, commit, "b", func(dir string) {
				if got := read(t, dir, "b.secret"); got != "another secret\n" {
					t.Errorf("the recycled copy holds %q, want the smudged file", got)
				}
				write(t, dir, "b.secret", "a third secret\n")
			})
			if err := r.Advance(ctx, commit, next); err != nil {
				t.Fatal(err)
			}
			if got := sh(t, ws, "git cat-file blob HEAD:b.secret"); got != "n guveq frperg" {
				t.Errorf("b.secret committed as %q, want it cleaned", got)
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" || read(t, ws, "b.secret") != "a third secret\n" {
				t.Errorf("after the second move: status %q", st)
			}
		})
	}
}

// With core.autocrlf, eol=crlf or ident, the files a move writes are
// byte for byte what git checkout writes, and the status is clean.
func TestLineEndingsAndIdentAsGitWritesThem(t *testing.T) {
	gitHeavy(t)
	for _, c := range []struct{ name, setup string }{
		{"autocrlf", "git config core.autocrlf true"},
		{"eol=crlf", "echo '*.txt eol=crlf' > .gitattributes && git add .gitattributes && git commit -q -m attrs"},
		{"ident", "echo '*.txt ident' > .gitattributes && git add .gitattributes && git commit -q -m attrs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			isolatedGlobal(t)
			ws := userRepo(t)
			sh(t, ws, c.setup)
			r := open(t, ws)
			ctx := t.Context()
			start, _ := r.Head(ctx)
			_, commit := attempt(t, r, start, "a", func(dir string) {
				write(t, dir, "notes.txt", "one\n$Id$\nthree\n")
				write(t, dir, "sub/new.txt", "a\nb\n")
			})
			if err := r.Advance(ctx, start, commit); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"notes.txt", "sub/new.txt"} {
				if got, want := read(t, ws, path), gitCheckout(t, ws, commit, path); got != want {
					t.Errorf("%s in the workspace: %q, git checkout writes %q", path, got, want)
				}
			}
			if st := sh(t, ws, "git status --porcelain"); st != "" {
				t.Errorf("status after the move: %q", st)
			}
		})
	}
}

// In a sparse checkout a task's change outside the cone (the copy is
// whole) is committed, and the move keeps the workspace sparse: nothing
// outside the cone is written, and the status is clean.
func TestSparseCheckoutKeepsTheChangesOutsideTheCone(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	write(t, ws, "in/i.txt", "i\n")
	write(t, ws, "out/o.txt", "o\n")
	sh(t, ws, "git add -A && git commit -q -m dirs && git sparse-checkout set in")
	if _, err := os.Stat(filepath.Join(ws, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the sparse checkout did not take out/ away")
	}
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, commit := attempt(t, r, start, "a", func(dir string) {
		if read(t, dir, "out/o.txt") != "o\n" {
			t.Error("the copy is not whole")
		}
		write(t, dir, "out/o.txt", "o changed\n")
		write(t, dir, "out/new/n.txt", "n\n")
		write(t, dir, "in/i.txt", "i changed\n")
	})
	for path, want := range map[string]string{"out/o.txt": "o changed", "out/new/n.txt": "n", "in/i.txt": "i changed"} {
		if got := sh(t, ws, withPending(r)+"git show "+commit+":"+path); got != want {
			t.Errorf("%s in the task's commit: %q, want %q", path, got, want)
		}
	}
	if err := r.Advance(ctx, start, commit); err != nil {
		t.Fatal(err)
	}
	if read(t, ws, "in/i.txt") != "i changed\n" {
		t.Error("the change inside the cone did not reach the workspace")
	}
	if _, err := os.Stat(filepath.Join(ws, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the move wrote outside the sparse checkout's cone")
	}
	if st := sh(t, ws, "git status --porcelain"); st != "" {
		t.Errorf("status after the move: %q", st)
	}
}

// A filter the user's config marks required whose program cannot run is
// named by CheckFilters, with the fix; one that can run is not.
func TestCheckFiltersRefusesARequiredFilterThatCannotRun(t *testing.T) {
	gitHeavy(t)
	isolatedGlobal(t)
	ws := userRepo(t)
	sh(t, ws, "git config filter.ok.clean cat && git config filter.ok.required true && "+
		"git config filter.lfs.process 'git-lfs-missing-here filter-process' && git config filter.lfs.required true && "+
		"git config filter.x.clean 'git no-such-subcommand clean %f' && git config filter.x.required yes")
	r := open(t, ws)
	err := r.CheckFilters(t.Context())
	var fe *FilterError
	if !errors.As(err, &fe) || fe.Name != "lfs" || fe.Program != "git-lfs-missing-here" {
		t.Fatalf("check = %v, want a FilterError naming lfs and its program", err)
	}
	sh(t, ws, "git config --unset filter.lfs.required")
	r = open(t, ws)
	if err := r.CheckFilters(t.Context()); !errors.As(err, &fe) || fe.Name != "x" || fe.Program != "git no-such-subcommand" {
		t.Fatalf("check = %v, want a FilterError naming x", err)
	}
	sh(t, ws, "git config filter.x.clean 'git hash-object --stdin'")
	r = open(t, ws)
	if err := r.CheckFilters(t.Context()); err != nil {
		t.Fatalf("check = %v, want none", err)
	}
}

// Two tasks' moves in each kind of repository git makes: the workspace
// is each task's commit, as git checks it out, and the status is clean.
// (A submodule: TestSubmoduleSurvivesATask.)
func TestRepositoryKinds(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	for _, c := range []struct{ name, init, setup string }{
		{"sha256", "git init -q -b main --object-format=sha256", ""},
		{"index v4", "git init -q -b main", "git config index.version 4 && git update-index --index-version 4"},
		{"split index", "git init -q -b main", "git config core.splitIndex true && git update-index --split-index"},
		{"untracked cache", "git init -q -b main", "git config core.untrackedCache true && git update-index --untracked-cache"},
		{"sparse index", "git init -q -b main", "mkdir -p out && echo o > out/o && git add -A && git commit -q -m out && " +
			"git sparse-checkout set --cone d && git config index.sparse true && git sparse-checkout reapply"},
		{"linked worktree", "git init -q -b main", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			sh(t, ws, c.init+" && git config user.name U && git config user.email u@example.com")
			write(t, ws, "notes.txt", "one\n")
			sh(t, ws, "git add -A && git commit -q -m start")
			if c.name == "linked worktree" {
				wt := filepath.Join(t.TempDir(), "wt")
				sh(t, ws, "git worktree add -q -b work '"+wt+"'")
				ws = wt
			}
			if c.setup != "" {
				sh(t, ws, c.setup)
			}
			r := open(t, ws)
			ctx := t.Context()
			head, _ := r.Head(ctx)
			for i, edit := range []func(dir string){
				func(dir string) { write(t, dir, "notes.txt", "two\n"); write(t, dir, "d/new.txt", "new\n") },
				func(dir string) {
					_ = os.Remove(filepath.Join(dir, "notes.txt"))
					write(t, dir, "d/new.txt", "newer\n")
				},
			} {
				_, commit := attempt(t, r, head, string(rune('a'+i)), edit)
				if err := r.Advance(ctx, head, commit); err != nil {
					t.Fatalf("task %d: %v", i, err)
				}
				head = commit
				if st := sh(t, ws, "git status --porcelain"); st != "" {
					t.Errorf("task %d: status %q", i, st)
				}
			}
			if got := read(t, ws, "d/new.txt"); got != "newer\n" {
				t.Errorf("d/new.txt = %q", got)
			}
			if _, err := os.Stat(filepath.Join(ws, "notes.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Error("notes.txt, deleted by the second task, is still there")
			}
			if got := sh(t, ws, "git log --format=%s"); got != "b: do b\na: do a\nstart" && !strings.HasSuffix(got, "a: do a\nout\nstart") {
				t.Errorf("history:\n%s", got)
			}
		})
	}
}

// A move leaves the user's work on other files as it is: an edit in the
// work tree, a staged change, an untracked file.
func TestAdvanceKeepsTheUsersWorkOnOtherFiles(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	write(t, ws, "notes.txt", "the user's edit\n")
	write(t, ws, "héllo wörld.txt", "staged by the user\n")
	sh(t, ws, "git add 'héllo wörld.txt'")
	write(t, ws, "mine.txt", "untracked\n")
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, ws, "git status --porcelain"); got != "M  \"h\\303\\251llo w\\303\\266rld.txt\"\n M notes.txt\n?? mine.txt" {
		t.Errorf("status after the move:\n%s", got)
	}
	if read(t, ws, "a.txt") != "a\n" || read(t, ws, "notes.txt") != "the user's edit\n" {
		t.Error("the move's file or the user's edit is not there")
	}
}

// The user's config is read on first use, after Open: a config git cannot
// read then (edited while the run starts) stops what needs the user's
// filters with the fix, instead of copies made without them, which would
// commit a filtered file (git-crypt's) unconverted.
func TestUnreadableUserConfigStopsWhatNeedsTheFilters(t *testing.T) {
	global := isolatedGlobal(t)
	ws := userRepo(t)
	r := open(t, ws)
	head, err := r.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(global, []byte("[filter \"crypt\"\n\tclean = broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = r.CheckFilters(t.Context())
	if err == nil || !strings.Contains(err.Error(), "git config --list") {
		t.Fatalf("CheckFilters = %v, want the config's error and the fix", err)
	}
	if err := r.NewCopy(t.Context(), filepath.Join(t.TempDir(), "copy"), head); err == nil {
		t.Fatal("NewCopy made a copy without the user's filters")
	}
}
