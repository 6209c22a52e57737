package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tree that would add a gitlink (a nested repository's commit) the base
// lacks is refused, naming its path; the base's own gitlinks and plain
// changes pass.
func TestNewGitlinksAreRefused(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "a.txt")
	const sub = "1111111111111111111111111111111111111111"
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+sub+",kept")
	base := strings.TrimSpace(gitIn(t, dir, nil, "", "write-tree"))
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "b.txt")
	plain := strings.TrimSpace(gitIn(t, dir, nil, "", "write-tree"))
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,2222222222222222222222222222222222222222,x/hid den")
	linked := strings.TrimSpace(gitIn(t, dir, nil, "", "write-tree"))

	g := git{dir: dir, gitDir: filepath.Join(dir, ".git"), hardened: true}
	if err := newGitlinks(t.Context(), g, nil, base, plain); err != nil {
		t.Errorf("a plain change beside the base's gitlink: %v", err)
	}
	err := newGitlinks(t.Context(), g, nil, base, linked)
	var ge *GitlinkError
	if !errors.As(err, &ge) || len(ge.Paths) != 1 || ge.Paths[0] != "x/hid den" {
		t.Fatalf("err = %v, want a GitlinkError naming x/hid den", err)
	}
	if !strings.Contains(err.Error(), "cannot add a submodule") {
		t.Errorf("message %q", err)
	}
}
