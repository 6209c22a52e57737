package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// A recycled copy loses everything git does not track, as git clean -ffdx
// would: untracked and ignored files, directories, links (not what they
// point at), while its tracked files, its submodule directories and its
// .git stay; and the same through git clean for an index of version 4.
func TestCleanCopyIsGitClean(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	for _, v4 := range []bool{false, true} {
		ws := userRepo(t)
		write(t, ws, "src/keep.go", "package src\n")
		sh(t, ws, "git add -A && git commit -q -m src")
		r := open(t, ws)
		head, _ := r.Head(t.Context())
		dir := filepath.Join(t.TempDir(), "c")
		if err := r.NewCopy(t.Context(), dir, head); err != nil {
			t.Fatal(err)
		}
		outside := t.TempDir()
		write(t, outside, "precious.txt", "mine")
		write(t, dir, "build/out.bin", "ignored")
		write(t, dir, "src/new.go", "untracked")
		write(t, dir, "deep/a/b/c.txt", "untracked")
		if err := os.MkdirAll(filepath.Join(dir, "empty/dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "src/link")); err != nil {
			t.Fatal(err)
		}
		if v4 {
			sh(t, dir, "git update-index --index-version 4")
		}
		if err := r.copies.cleanCopy(t.Context(), dir); err != nil {
			t.Fatal(err)
		}
		if st := gitStatus(t, dir); st != "" {
			t.Errorf("v4 %v: after the clean: %q", v4, st)
		}
		for _, gone := range []string{"build", "src/new.go", "deep", "empty", "src/link"} {
			if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
				t.Errorf("v4 %v: %s is still there", v4, gone)
			}
		}
		if read(t, outside, "precious.txt") != "mine" || read(t, dir, "src/keep.go") != "package src\n" || read(t, dir, "notes.txt") == "" {
			t.Errorf("v4 %v: a tracked file or the link's target changed", v4)
		}
	}
}
