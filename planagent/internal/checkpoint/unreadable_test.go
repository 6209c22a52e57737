package checkpoint

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// unprivilegedEnv names, in the process unprivileged starts, the
// directory its test works in.
const unprivilegedEnv = "CHECKPOINT_TEST_UNPRIVILEGED_DIR"

// nobody is the uid and gid the host side runs as in unprivileged.
const nobody = 65534

// unprivileged runs body as a user without root's power to read whatever
// it likes: what a directory's permissions hide from planagent run by a
// user is visible to root, so the tests of it must drop root. Run as root
// (CI), the test binary runs this test again as uid and gid 65534 with no
// supplementary groups, in a directory of that uid, after setup (may be
// nil) made what it needs there as root; body then runs in that process.
// Run as another user, body runs here, and a setup skips the test.
func unprivileged(t *testing.T, setup func(t *testing.T, dir string), body func(t *testing.T, dir string)) {
	t.Helper()
	if dir := os.Getenv(unprivilegedEnv); dir != "" {
		if os.Geteuid() != nobody {
			t.Fatalf("uid %d, want %d", os.Geteuid(), nobody)
		}
		body(t, dir)
		return
	}
	if os.Geteuid() != 0 {
		if setup != nil {
			t.Skip("needs root to make files of another uid before the test drops to uid 65534")
		}
		body(t, t.TempDir())
		return
	}
	// Not t.TempDir: its parent is root's, closed to uid 65534.
	top, err := os.MkdirTemp("", "checkpoint-unprivileged-") //nolint:usetesting // see above
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	// The test binary lies in a directory only root may enter: linked (or
	// copied) into one of the unprivileged user's.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(top, "checkpoint.test")
	if err := os.Link(exe, bin); err != nil {
		if err := copyExecutable(bin, exe); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(top, "work")
	for _, d := range []string{top, work, filepath.Join(top, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(t, work)
	}
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	c := exec.CommandContext(t.Context(), bin, "-test.run="+strings.Join(run, "/"), "-test.count=1", "-test.v")
	c.Dir = work
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "TMPDIR", "XDG_CONFIG_HOME", "GOCOVERDIR":
		default:
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, unprivilegedEnv+"="+work, "HOME="+top, "TMPDIR="+filepath.Join(top, "tmp"))
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := c.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("cannot run the test as uid %d: %v", nobody, err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Errorf("as uid %d: %v\n%s", nobody, err, out)
	}
}

func copyExecutable(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// nestedRepo makes a repository at dir/rel with a commit, whose config
// names a filter that creates marker, applied to every file there.
func nestedRepo(t *testing.T, dir, rel, marker string) {
	t.Helper()
	sh(t, dir, "mkdir -p '"+rel+"' && cd '"+rel+"' && git init -q && echo data > file.txt && git add file.txt && "+
		"git -c user.name=a -c user.email=a@b commit -qm x && "+
		"git config filter.evil.clean 'touch "+marker+"; cat' && git config filter.evil.smudge 'touch "+marker+"; cat' && "+
		"git config filter.evil.required true && echo '* filter=evil' > .gitattributes")
}

// A repository the agent hid in a directory it made unreadable (0311, or
// 0111 with nothing but search left) is found all the same when planagent
// is not root: the walk gives the directory its owner's permissions back,
// the nested .git is removed and named, its files are committed as plain
// files, and nothing runs on the host.
func TestUnreadableDirectoryHidesNoRepository(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	unprivileged(t, nil, func(t *testing.T, top string) {
		ws := userRepo(t)
		r := open(t, ws)
		ctx := t.Context()
		start, _ := r.Head(ctx)
		dir := filepath.Join(top, "copy")
		if err := r.NewCopy(ctx, dir, start); err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(top, "pwned")
		nestedRepo(t, dir, "hid", marker)
		nestedRepo(t, dir, "deep/er", marker)
		sh(t, dir, "chmod 0311 hid && chmod 0111 deep/er && chmod 0311 deep")
		commit, removed, err := r.Squash(ctx, dir, start, "a: hidden", "")
		if err != nil {
			t.Fatalf("squash: %v", err)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Error("a filter of the agent's ran on the host")
		}
		names := strings.Join(removed, "\n")
		for _, p := range []string{"hid/.git", "deep/er/.git"} {
			if !strings.Contains(names, p) {
				t.Errorf("removed does not name %s: %q", p, removed)
			}
		}
		tree := sh(t, ws, withPending(r)+"git ls-tree -r "+commit)
		if strings.Contains(tree, "160000") || !strings.Contains(tree, "hid/file.txt") || !strings.Contains(tree, "deep/er/file.txt") {
			t.Errorf("the commit's tree:\n%s", tree)
		}
		if err := r.Advance(ctx, start, commit); err != nil {
			t.Fatal(err)
		}
		sh(t, ws, "git fsck --no-dangling")
		if _, err := os.Lstat(marker); err == nil {
			t.Error("a filter of the agent's ran on the host")
		}
	})
}

// The same inside a submodule's directory: what the task wrote there is
// the SubmoduleError, unreadable or not.
func TestUnreadableSubmoduleIsStillChecked(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	unprivileged(t, nil, func(t *testing.T, top string) {
		ws := userRepo(t)
		sub := sh(t, ws, "mkdir lib && cd lib && git init -q && git -c user.name=U -c user.email=u@e commit -q --allow-empty -m sub && git rev-parse HEAD")
		sh(t, ws, "rm -rf lib/.git && git update-index --add --cacheinfo 160000,"+sub+",lib && git commit -q -m 'add lib'")
		r := open(t, ws)
		ctx := t.Context()
		start, _ := r.Head(ctx)
		dir := filepath.Join(top, "copy")
		if err := r.NewCopy(ctx, dir, start); err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(top, "pwned")
		sh(t, dir, "rmdir lib")
		nestedRepo(t, dir, "lib", marker)
		sh(t, dir, "chmod 0311 lib")
		_, _, err := r.Squash(ctx, dir, start, "a: hidden", "")
		var se *SubmoduleError
		if !errors.As(err, &se) || strings.Join(se.Paths, ",") != "lib" {
			t.Errorf("squash = %v, want a SubmoduleError naming lib", err)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Error("a filter of the agent's ran on the host")
		}
	})
}

// A directory planagent cannot give its permissions back (another uid's:
// the agent ran as root) refuses the attempt with an UnreadableError that
// names it, in a squash and in the purge of a copy thrown away; a nested
// .git inside a directory only made unreadable is purged all the same.
func TestUnreadableDirectoryOfAnotherUserIsNamed(t *testing.T) {
	t.Parallel()
	unprivileged(t, func(t *testing.T, top string) {
		// Made by "the agent", as root.
		sh(t, top, "mkdir -p a/mine/.git/objects a/theirs/secret b/mine/.git/objects && echo x > a/theirs/secret/f && "+
			"chown -R 65534:65534 a b && chown 0:0 a/theirs && chmod 0711 a/theirs && chmod 0311 a/mine b/mine")
	}, func(t *testing.T, top string) {
		_, err := purge(filepath.Join(top, "a"), purgeOptions{})
		var ue *UnreadableError
		if !errors.As(err, &ue) || ue.Path != "theirs" || !strings.Contains(err.Error(), "cannot read: theirs") {
			t.Errorf("purge = %v, want an UnreadableError naming theirs", err)
		}
		if err := os.RemoveAll(filepath.Join(top, "a", "theirs")); err == nil {
			t.Fatal("the directory of another uid could be removed: the test proves nothing")
		}
		dir := filepath.Join(top, "b")
		found, err := purge(dir, purgeOptions{})
		if err != nil || len(found.removed) != 1 || !strings.Contains(found.removed[0], "mine/.git") {
			t.Errorf("purge = %q, %v; want mine/.git removed", found.removed, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "mine", ".git")); err == nil {
			t.Error("mine/.git is still there")
		}
	})
}
