package checkpoint

import (
	"os/exec"
	"strings"
	"testing"
)

// With git-lfs installed (`git lfs install` puts its filter in the global
// config): the task's copy holds the large file's content, its new large
// file is committed as an LFS pointer with its object in the user's LFS
// storage, and the workspace gets the content, status clean.
func TestLFSAsGitDoesIt(t *testing.T) {
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Skip("git-lfs is not installed (.ci/run installs it)")
	}
	isolatedGlobal(t)
	ws := userRepo(t)
	sh(t, ws, "git lfs install && git lfs track '*.bin'")
	write(t, ws, "old.bin", "old large content\n")
	sh(t, ws, "git add -A && git commit -q -m lfs")
	if p := sh(t, ws, "git cat-file blob HEAD:old.bin"); !strings.Contains(p, "git-lfs.github.com/spec") {
		t.Fatalf("the fixture is not an LFS pointer: %q", p)
	}
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, commit := attempt(t, r, start, "a", func(dir string) {
		if got := read(t, dir, "old.bin"); got != "old large content\n" {
			t.Errorf("the copy holds %q, want the LFS file's content", got)
		}
		write(t, dir, "new.bin", "new large content\n")
	})
	if err := r.Advance(ctx, start, commit); err != nil {
		t.Fatal(err)
	}
	if p := sh(t, ws, "git cat-file blob HEAD:new.bin"); !strings.Contains(p, "git-lfs.github.com/spec") {
		t.Errorf("new.bin committed as %q, want an LFS pointer", p)
	}
	if got := read(t, ws, "new.bin"); got != "new large content\n" {
		t.Errorf("new.bin in the workspace: %q", got)
	}
	if st := sh(t, ws, "git status --porcelain"); st != "" {
		t.Errorf("status: %q", st)
	}
}
