package checkpoint

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Open asks git where a repository's parts are in one rev-parse: what it
// learns must be what git says of each kind of workspace — the top of a
// repository, a linked worktree (its objects and refs in the main
// repository's git directory), a detached HEAD, a HEAD with no commit, a
// directory inside a repository (a shadow repository then) — and the LFS
// storage read with the rest of the user's config is under the common
// git directory.
func TestOpenLocatesTheRepository(t *testing.T) {
	t.Parallel()
	resolved := func(p string) string {
		t.Helper()
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	main := userRepo(t)
	// A filter named lfs in the repository's own config, whatever the
	// machine's global config holds, and a relative storage.
	sh(t, main, "git config filter.lfs.clean cat && git config lfs.storage big")
	linked := filepath.Join(t.TempDir(), "linked")
	sh(t, main, "git worktree add -q -b side '"+linked+"'")
	mainGit := resolved(filepath.Join(main, ".git"))

	cases := []struct {
		name, ws                      string
		mode, branch, gitDir, objects string
		common                        string
	}{
		{name: "top", ws: main, mode: "git", branch: "main", gitDir: mainGit,
			objects: filepath.Join(mainGit, "objects"), common: mainGit},
		{name: "linked worktree", ws: linked, mode: "git", branch: "side", gitDir: filepath.Join(mainGit, "worktrees", "linked"),
			objects: filepath.Join(mainGit, "objects"), common: mainGit},
	}
	for _, c := range cases {
		r := open(t, c.ws)
		if r.Mode() != c.mode || r.Branch() != c.branch || resolved(r.GitDir()) != c.gitDir ||
			resolved(r.objectsDir) != c.objects || resolved(r.commonDir) != c.common || r.objectFormat != "sha1" {
			t.Errorf("%s: mode %q branch %q git dir %s objects %s common %s format %s, want %q %q %s %s %s sha1", c.name,
				r.Mode(), r.Branch(), r.GitDir(), r.objectsDir, r.commonDir, r.objectFormat, c.mode, c.branch, c.gitDir, c.objects, c.common)
		}
		u, err := r.user.get(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := "lfs.storage=" + filepath.Join(r.commonDir, "big"); !slices.Contains(u.copyArgs, want) {
			t.Errorf("%s: copy args %q, want %s", c.name, u.copyArgs, want)
		}
	}

	sh(t, main, "git switch -q --detach")
	if r := open(t, main); r.Mode() != "git" || r.Branch() != "" {
		t.Errorf("detached HEAD: mode %q branch %q, want git and no branch", r.Mode(), r.Branch())
	}

	unborn := t.TempDir()
	sh(t, unborn, "git init -q -b main")
	if _, err := Open(t.Context(), unborn, filepath.Join(t.TempDir(), "shadow.git"), nil); err == nil || !strings.Contains(err.Error(), "no commit yet") {
		t.Errorf("a repository without a commit: %v, want the no-commit-yet error", err)
	}

	sub := filepath.Join(main, "sub")
	write(t, main, "sub/a.txt", "a\n")
	shadow := filepath.Join(t.TempDir(), "shadow.git")
	r, err := Open(t.Context(), sub, shadow, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if r.Mode() != "shadow" || r.Branch() != "codeagent" || resolved(r.objectsDir) != filepath.Join(resolved(shadow), "objects") || resolved(r.commonDir) != resolved(shadow) {
		t.Errorf("a directory inside a repository: mode %q branch %q objects %s common %s, want a shadow repository at %s",
			r.Mode(), r.Branch(), r.objectsDir, r.commonDir, shadow)
	}
}
