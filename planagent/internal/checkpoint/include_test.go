package checkpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// includeRepo is a user's repository with ignored files of every kind: a
// .env, a node_modules tree with a relative bin link, a generated file, a
// link out of the workspace, a FIFO, a nested repository, an untracked
// (not ignored) file, and the volumes inside the workspace.
func includeRepo(t *testing.T) (ws, outside string) {
	t.Helper()
	ws = userRepo(t)
	outside = t.TempDir()
	write(t, outside, "secret", "outside the workspace\n")
	write(t, ws, ".gitignore", "build/\n.env\nnode_modules/\n*.gen.go\nvolumes/\nfifo\nlink-out\nnested/\n")
	write(t, ws, IncludeFile, ".env\nnode_modules/\n# a comment\nfifo\nlink-out\nnested/\nuntracked.txt\nvolumes/\n")
	sh(t, ws, "git add -A && git commit -q -m 'ignore and include'")
	write(t, ws, ".env", "TOKEN=from-the-env-file\n")
	write(t, ws, "node_modules/left-pad/index.js", "module.exports = 1\n")
	write(t, ws, "node_modules/left-pad/cli.sh", "#!/bin/sh\necho pad\n")
	if err := os.Chmod(filepath.Join(ws, "node_modules/left-pad/cli.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "node_modules/.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../left-pad/cli.sh", filepath.Join(ws, "node_modules/.bin/left-pad")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "api.gen.go", "package api // generated\n")
	write(t, ws, "untracked.txt", "not ignored\n")
	write(t, ws, "volumes/attempts/x/a.txt", "a copy\n")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, ws, "mkdir nested && cd nested && git init -q && echo n > n.txt")
	return ws, outside
}

func TestIncludedIgnoredFilesReachEveryCopy(t *testing.T) {
	gitHeavy(t)
	ws, outside := includeRepo(t)
	r, err := Open(t.Context(), ws, filepath.Join(t.TempDir(), "shadow.git"), []string{filepath.Join(ws, "volumes")})
	if err != nil {
		t.Fatal(err)
	}
	found, err := r.SetInclude(t.Context(), []string{"*.gen.go"})
	if err != nil {
		t.Fatal(err)
	}
	files := r.IncludedFiles()
	sort.Strings(files)
	want := []string{".env", "api.gen.go", "link-out", "node_modules/.bin/left-pad", "node_modules/left-pad/cli.sh", "node_modules/left-pad/index.js"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("included %q, want %q (never the untracked file, the volumes, a FIFO or a nested repository)", files, want)
	}
	if found.Files != len(want) || !strings.Contains(strings.Join(found.Skipped, ";"), "nested/ (a nested repository)") {
		t.Errorf("found %+v", found)
	}

	head, _ := r.Head(t.Context())
	pool := filepath.Join(t.TempDir(), "pool")
	r.SetPool(pool, 2)
	dir := filepath.Join(t.TempDir(), "a.1")
	if err := r.NewCopy(t.Context(), dir, head); err != nil {
		t.Fatal(err)
	}
	check := func(dir string) {
		t.Helper()
		if got := read(t, dir, ".env"); got != "TOKEN=from-the-env-file\n" {
			t.Errorf(".env in the copy: %q", got)
		}
		if got := read(t, dir, "node_modules/.bin/left-pad"); got != "#!/bin/sh\necho pad\n" {
			t.Errorf("the bin link reads %q", got)
		}
		if fi, err := os.Stat(filepath.Join(dir, "node_modules/left-pad/cli.sh")); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("cli.sh lost its mode: %v %v", fi, err)
		}
		if target, err := os.Readlink(filepath.Join(dir, "link-out")); err != nil || target != filepath.Join(outside, "secret") {
			t.Errorf("link-out is %q %v: a link is copied as the link, never its target", target, err)
		}
		for _, p := range []string{"untracked.txt", "volumes", "fifo", "nested"} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s is in the copy", p)
			}
		}
		for _, line := range strings.Split(gitStatus(t, dir), "\n") {
			if line != "" && !strings.HasPrefix(line, "!! ") {
				t.Errorf("the copy's git sees a change (the included files must be ignored): %s", line)
			}
		}
	}
	check(dir)

	// A task that edits and deletes included files and makes node_modules
	// a link out: its commit holds none of it, and the recycled copy gets
	// the workspace's files again without writing through the link.
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("TOKEN=changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "app.js", "require('left-pad')\n")
	sh(t, dir, "git add -f node_modules && git commit -q -m link") // tracked in the task's commit
	commit, _, err := r.Squash(t.Context(), dir, head, "a: link", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sh(t, ws, withPending(r)+"git show --name-only --format= "+commit); got != "app.js\nnode_modules" {
		t.Errorf("the task's commit holds %q, want app.js and the link only", got)
	}
	if got := read(t, ws, ".env"); got != "TOKEN=from-the-env-file\n" {
		t.Errorf("the workspace's .env became %q", got)
	}
	if err := r.RemoveCopy(dir); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(t.TempDir(), "b.1")
	if err := r.NewCopy(t.Context(), next, head); err != nil { // recycled
		t.Fatal(err)
	}
	check(next)

	// A copy of the commit whose node_modules is a link: the included
	// files under it are left out, nothing is written where it points.
	r.keeps.forget()
	if _, err := r.Apply(t.Context(), dir, head, commit, head); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "c.1")
	if err := r.NewCopy(t.Context(), linked, commit); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Errorf("the copy wrote through the task's link into %s: %v", victim, entries)
	}
	if got := read(t, linked, ".env"); got != "TOKEN=from-the-env-file\n" {
		t.Errorf(".env beside the link: %q", got)
	}
}

func TestNoIncludeNoIgnoredFiles(t *testing.T) {
	ws, _ := includeRepo(t)
	if err := os.Remove(filepath.Join(ws, IncludeFile)); err != nil {
		t.Fatal(err)
	}
	r := open(t, ws)
	if found, err := r.SetInclude(t.Context(), nil); err != nil || found.Files != 0 {
		t.Fatalf("%+v %v", found, err)
	}
	head, _ := r.Head(t.Context())
	dir := filepath.Join(t.TempDir(), "a.1")
	if err := r.NewCopy(t.Context(), dir, head); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".env", "node_modules", "api.gen.go"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s is in a copy although nothing names it", p)
		}
	}
}

func TestIncludeFileMustBeAFile(t *testing.T) {
	ws := userRepo(t)
	if err := syscall.Mkfifo(filepath.Join(ws, IncludeFile), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := open(t, ws).SetInclude(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Fatalf("err %v", err)
	}
}
