package checkpoint

import (
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWritePack has git read back a pack written here from loose objects
// git made: every object, in both object formats, and git's own check of
// the pack and its index.
func TestWritePack(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			onlySha256InShort(t, format)
			t.Parallel()
			dir := t.TempDir()
			repo := filepath.Join(dir, "repo.git")
			gitT(t, dir, "init", "-q", "--bare", "--object-format="+format, repo)
			quarantine := filepath.Join(dir, "quarantine")
			if err := os.MkdirAll(quarantine, 0o755); err != nil {
				t.Fatal(err)
			}
			env := []string{"GIT_DIR=" + repo, "GIT_OBJECT_DIRECTORY=" + quarantine}
			big := strings.Repeat("a line of a larger file\n", 5000)
			var blobs []string
			for _, content := range []string{"", "x", "hello\n", big} {
				blobs = append(blobs, gitIn(t, dir, env, content, "hash-object", "-w", "--stdin"))
			}
			tree := gitIn(t, dir, env, "100644 blob "+blobs[2]+"\thello.txt\n100644 blob "+blobs[3]+"\tbig.txt\n", "mktree")
			commit := gitIn(t, dir, append(env, identity...), "msg\n", "commit-tree", tree)
			hexLen := 40
			if format == "sha256" {
				hexLen = 64
			}
			files, err := listFiles(quarantine)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := readLoose(quarantine, files, hexLen)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 6 {
				t.Fatalf("read %d loose objects, want 6", len(objs))
			}
			name, _, err := writePack(filepath.Join(repo, "objects", "pack"), format, objs)
			if err != nil {
				t.Fatal(err)
			}
			gitT(t, dir, "--git-dir="+repo, "verify-pack", filepath.Join(repo, "objects", "pack", name+".idx"))
			gitT(t, dir, "--git-dir="+repo, "fsck", "--strict", "--no-dangling")
			for _, o := range append(blobs, tree, commit) {
				gitT(t, dir, "--git-dir="+repo, "cat-file", "-e", o)
			}
			if got := gitIn(t, dir, []string{"GIT_DIR=" + repo}, "", "cat-file", "blob", blobs[3]); got+"\n" != big {
				t.Fatalf("the big blob reads back as %d bytes", len(got))
			}
			for _, o := range objs {
				if len(hex.EncodeToString(o.id)) != hexLen {
					t.Fatalf("object id %x", o.id)
				}
			}
		})
	}
}

func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	gitIn(t, dir, nil, "", args...)
}

func gitIn(t *testing.T, dir string, env []string, stdin string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	c.Stdin = strings.NewReader(stdin)
	out, err := c.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %v: %v\n%s", args, err, stderr)
	}
	return strings.TrimSpace(string(out))
}
