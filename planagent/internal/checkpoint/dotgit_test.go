package checkpoint

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// isDotGit says of each name what git itself says with core.protectHFS and
// core.protectNTFS on, and the hardened git of the copies has both on: git
// refuses to put d/<name>/f in an index exactly when isDotGit takes name
// for .git.
func TestIsDotGitAgreesWithGit(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := t.TempDir()
	sh(t, ws, "git init -q")
	idx := filepath.Join(t.TempDir(), "index")
	hardened := git{dir: ws, hardened: true}
	const emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
	for _, c := range []struct {
		name string
		want bool
	}{
		{".git", true}, {".Git", true}, {".GIT", true},
		// HFS+: ignorable code points anywhere, case folded
		{".git\u200c", true}, {"\u200c.git", true}, {".g\u200dit", true}, {".GIT\ufeff", true},
		{".git\u200e\u200f", true}, {".git\u202a", true}, {".git\u202e", true}, {".git\u206a", true}, {".git\u206f", true},
		{".git\u00a0", false}, // a no-break space is a character to HFS+
		{".git\u2060", false}, // nor is the word joiner ignored
		{".gït", false}, {".gi\xfft", false}, {"\xff.git", false},
		{".git\xff", true}, {".git\u200c\xffx", true}, // git reads bytes that are not UTF-8 as the name's end
		// NTFS: trailing spaces and periods, streams, the short name
		{".git.", true}, {".git ", true}, {".GIT. .", true}, {".git:stream", true},
		{"git~1", true}, {"GIT~1", true}, {"git~1.", true}, {"git~1:x", true},
		{`a\.git`, true}, {`a\git~1 `, true}, {`.git\b`, true},
		{"git~2", false}, {"git~1x", false}, {".gitx", false}, {"x.git", false}, {"..git", false},
		{"git", false}, {".gitignore", false}, {".gitmodules", false}, {"a.git.", false},
	} {
		if got := isDotGit(c.name); got != c.want {
			t.Errorf("isDotGit(%q) = %v, want %v", c.name, got, c.want)
		}
		_, err := hardened.runEnv(t.Context(), []string{"GIT_INDEX_FILE=" + idx}, nil,
			"update-index", "--add", "--cacheinfo", "100644,"+emptyBlob+",d/"+c.name+"/f")
		if refused := err != nil; refused != c.want {
			t.Errorf("the copies' git refuses d/%q/f: %v (%v), want %v", c.name, refused, err, c.want)
		}
	}
}

// Names HFS+ or NTFS would take for .git are removed from a copy before
// its squash and named, so the commit holds none of them and the user's
// repository stays clean under git fsck --strict; look-alikes that are
// not .git anywhere are committed as they are.
func TestDotGitLookAlikesAreNotCommitted(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	dir := filepath.Join(t.TempDir(), "a")
	if err := r.NewCopy(ctx, dir, start); err != nil {
		t.Fatal(err)
	}
	const config = "[core]\n\tfsmonitor = false\n[filter \"x\"]\n\tclean = false\n"
	lookAlikes := []string{"y/.git\u200c", "Z/.GIT", "w/.git.", "v/.git ", "u/git~1", "t/\ufeff.Git", "s/.git:x", "r/.g\u200dit\u202e"}
	for _, p := range lookAlikes {
		write(t, dir, p+"/config", config)
		write(t, dir, p+"/HEAD", "ref: refs/heads/main\n")
	}
	kept := []string{"y/keep.txt", "k/.gitx/config", "k/git~2/f", "k/.git\u00a0/f"}
	for _, p := range kept {
		write(t, dir, p, "kept\n")
	}
	commit, removed, err := r.Squash(ctx, dir, start, "a: look-alikes", "")
	if err != nil {
		t.Fatalf("squash: %v", err)
	}
	files := sh(t, ws, withPending(r)+"git -c core.quotepath=false ls-tree -r -z --name-only "+commit+" | tr '\\0' '\\n'")
	for _, p := range lookAlikes {
		if strings.Contains(files, p+"/") {
			t.Errorf("the commit holds %q:\n%s", p, files)
		}
		if !strings.Contains(strings.Join(removed, "\n"), p) {
			t.Errorf("removed does not name %q: %q", p, removed)
		}
	}
	for _, p := range kept {
		if !strings.Contains(files, p) {
			t.Errorf("the commit lacks %q:\n%s", p, files)
		}
	}
	if err := r.Advance(ctx, start, commit); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", ws, "fsck", "--strict", "--full", "--no-dangling").CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
}
