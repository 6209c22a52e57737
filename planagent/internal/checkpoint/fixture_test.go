package checkpoint

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// userRepoTemplate is the repository userRepo hands out, made once per
// test binary by real git and copied for each test: making it takes seven
// processes (git init, two configs, add, commit and their shells), the
// copy one (the index refresh). The test binary's one package variable:
// TestMain sets root, a temporary directory it removes after the tests.
type userRepoTemplate struct {
	root string
	once sync.Once
	dir  string
	env  string // the environment git read when it made the template
	err  error
}

var userRepoTmpl userRepoTemplate

// gitEnvironment is what of the environment decides what git init, config
// and commit write: a test that points git at another global config (as
// isolatedGlobal does) gets a repository made under it, not the template.
func gitEnvironment() string {
	var b strings.Builder
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "XDG_CONFIG_HOME" || k == "PATH" {
			b.WriteString(kv)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// copyOfUserRepo copies the template into a new temporary directory of t,
// or returns "" when the template cannot serve: TestMain did not set
// its root, or t changed git's environment.
func copyOfUserRepo(t *testing.T) string {
	t.Helper()
	if userRepoTmpl.root == "" {
		return ""
	}
	userRepoTmpl.once.Do(func() {
		userRepoTmpl.env = gitEnvironment()
		userRepoTmpl.dir = filepath.Join(userRepoTmpl.root, "user-repo")
		userRepoTmpl.err = makeUserRepo(userRepoTmpl.dir)
	})
	if userRepoTmpl.err != nil {
		t.Fatalf("the user repository template: %v", userRepoTmpl.err)
	}
	if gitEnvironment() != userRepoTmpl.env {
		return ""
	}
	dir := t.TempDir()
	if err := copyTree(userRepoTmpl.dir, dir); err != nil {
		t.Fatalf("copying the user repository template: %v", err)
	}
	// The copy has the template's mtimes but its own inodes and ctimes:
	// refreshed, the index holds the copy's stat data, as after the
	// commit that made it, so git does not re-read every file on its
	// first look.
	sh(t, dir, "git update-index -q --refresh")
	return dir
}

// makeUserRepo is the repository a user has (see userRepo), made in dir.
func makeUserRepo(dir string) error {
	files := map[string]string{
		"notes.txt":       "one\ntwo\nthree\n",
		".gitignore":      "build/\n",
		"héllo wörld.txt": "unicode\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	c := exec.Command("sh", "-c", "git init -q -b main && git config user.name U && git config user.email u@example.com && "+
		"git add -A && git commit -q -m 'the user commit'")
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// copyTree copies the directories, regular files and symbolic links
// under src to dst, with their modes and modification times (git's index
// compares them).
func copyTree(src, dst string) error {
	type dirTime struct {
		path string
		info fs.FileInfo
	}
	var dirs []dirTime
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(to, info.Mode().Perm()); err != nil {
				return err
			}
			dirs = append(dirs, dirTime{to, info})
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			if err := copyFixtureFile(p, to, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chtimes(to, info.ModTime(), info.ModTime())
		default:
			return fmt.Errorf("%s: not a file, directory or link", p)
		}
	})
	if err != nil {
		return err
	}
	// Directories last: writing their entries changed their times.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].info.ModTime(), dirs[i].info.ModTime()); err != nil {
			return err
		}
	}
	return nil
}

func copyFixtureFile(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
