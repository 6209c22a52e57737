package checkpoint

import (
	"path/filepath"
	"strings"
	"testing"
)

// A directory git would take for a git directory (the agent's .git moved
// away with its config, objects and index; a bare repository; a worktree's
// git directory) is removed before the squash and named: committed, it
// would put a repository of the agent's into the user's tree, whose config
// git reads the moment someone runs git in it. The top of the copy keeps
// its files but loses its HEAD; a git directory the user's repository
// tracks (a test fixture) and directories with only part of one stay.
func TestMovedAwayGitDirectoryIsNotTaken(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	for _, f := range []string{"fixtures/bare.git/HEAD", "fixtures/bare.git/objects/info/packs", "fixtures/bare.git/refs/heads/main"} {
		write(t, ws, f, "fixture\n")
	}
	sh(t, ws, "git add -A && git commit -q -m fixture")
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "cp -r .git .git.orig && printf '[core]\\n\\tfsmonitor = false\\n' >> .git.orig/config && "+
		"git init -q --bare sub/bare.git && "+
		"mkdir wt && echo 'ref: refs/heads/main' > wt/HEAD && echo ../.git.orig > wt/commondir && "+
		"mkdir -p half/objects && echo x > half/HEAD && echo x > half/objects/o && "+
		"echo 'ref: refs/heads/main' > HEAD && mkdir objects refs && echo x > objects/o && echo x > refs/r && "+
		"echo changed >> notes.txt")
	commit, removed, err := r.Squash(ctx, dir, start, "a: git dirs", "")
	if err != nil {
		t.Fatalf("squash: %v", err)
	}
	files := sh(t, ws, withPending(r)+"git ls-tree -r --name-only "+commit)
	for _, gone := range []string{".git.orig/", "sub/bare.git/", "wt/", "\nHEAD\n"} {
		if strings.Contains("\n"+files+"\n", gone) {
			t.Errorf("the commit holds %q:\n%s", gone, files)
		}
	}
	for _, kept := range []string{"fixtures/bare.git/HEAD", "half/HEAD", "half/objects/o", "objects/o", "refs/r", "notes.txt"} {
		if !strings.Contains(files, kept) {
			t.Errorf("the commit lacks %s:\n%s", kept, files)
		}
	}
	names := strings.Join(removed, "\n")
	for _, p := range []string{"the git directory .git.orig, moved away from .git, is not taken", "the git directory sub/bare.git", "the git directory wt", "HEAD at the top of the copy"} {
		if !strings.Contains(names, p) {
			t.Errorf("removed does not say %q:\n%s", p, names)
		}
	}
	if strings.Contains(names, "fixtures") || strings.Contains(names, "half") {
		t.Errorf("removed names what stays:\n%s", names)
	}
	if err := r.Advance(ctx, start, commit); err != nil {
		t.Fatal(err)
	}
	sh(t, ws, "git fsck --no-dangling")
}
