package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A merge of disjoint additions and changes onto a moved head gives the
// very tree git merge-tree gives; a removal on either side, a path both
// changed and a path inside another's go to git.
func TestTrivialMergeIsGitsMerge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		theirs, mine string // shell run in the workspace for each side
		trivial      bool
	}{
		{"new files side by side", "echo a > a.txt", "echo b > b.txt", true},
		{"new files in new and old directories", "mkdir -p x/y && echo a > x/y/a.txt && echo n > src/n.txt", "mkdir -p x/z && echo b > x/z/b.txt && echo m > src/m.txt", true},
		{"changes to different files, a mode change", "echo more >> notes.txt", "echo c > src/keep.go && chmod +x run.sh", true},
		{"a link added", "echo a > a.txt", "ln -s notes.txt link", true},
		{"a directory and a file that sort around it", "echo a > x.txt && echo a > x-y", "mkdir -p x && echo b > x/b.txt", true},
		{"the same file", "echo one > notes.txt", "echo two > notes.txt", false},
		{"a file where the other made a directory", "mkdir -p d && echo x > d/f", "echo x > d", false},
		{"a removal on their side", "git rm -q run.sh", "echo b > b.txt", false},
		{"a removal on mine", "echo a > a.txt", "git rm -q run.sh", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := userRepo(t)
			sh(t, ws, "mkdir -p src && echo k > src/keep.go && echo '#!/bin/sh' > run.sh && git add -A && git commit -q -m base")
			base := sh(t, ws, "git rev-parse HEAD")
			sh(t, ws, c.theirs+" && git add -A && git commit -q -m theirs")
			onto := sh(t, ws, "git rev-parse HEAD")
			sh(t, ws, "git checkout -q --detach "+base+" && "+c.mine+" && git add -A && git commit -q -m mine")
			commit := sh(t, ws, "git rev-parse HEAD")
			sh(t, ws, "git checkout -q main")
			r := open(t, ws)
			q := filepath.Join(t.TempDir(), "objects")
			if err := os.MkdirAll(q, 0o755); err != nil {
				t.Fatal(err)
			}
			tree, ok, err := r.trivialMerge(q, base, commit, onto)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.trivial {
				t.Fatalf("trivial = %v, want %v", ok, c.trivial)
			}
			if !ok {
				return
			}
			want := strings.SplitN(sh(t, ws, "git merge-tree --write-tree "+onto+" "+commit), "\n", 2)[0]
			if tree != want {
				t.Errorf("tree %s, git merge-tree %s", tree, want)
			}
			// The trees written are whole objects git reads.
			sh(t, ws, "cp -r "+q+"/. .git/objects/ && git ls-tree -r "+tree+" >/dev/null && git fsck --no-dangling")
		})
	}
}

// A fan-out's base lies one merge further back at each merge: a base far
// more than a few dozen first parents back is still found (the merges of
// a 100-task fan-out were all sent to git before), and a commit off the
// first-parent line is not.
func TestReachesFarBack(t *testing.T) {
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	root := sh(t, ws, "git rev-parse HEAD")
	tree, err := r.commitTree(root)
	if err != nil {
		t.Fatal(err)
	}
	tip := root
	for i := range 300 {
		if tip, err = r.writeCommit(r.objectsDir, tree, []string{tip}, "merge "+strings.Repeat("x", i%7), time.Unix(int64(1e9+i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	side, err := r.writeCommit(r.objectsDir, tree, []string{root}, "side", time.Unix(1e9, 0))
	if err != nil {
		t.Fatal(err)
	}
	fresh := open(t, ws) // nothing remembered: every parent read through cat-file
	for _, repo := range []*Repo{r, fresh} {
		if ok, err := repo.reaches(tip, root, mergeReach); err != nil || !ok {
			t.Errorf("the root 300 first parents back: reached %v, %v", ok, err)
		}
		if ok, err := repo.reaches(tip, side, mergeReach); err != nil || ok {
			t.Errorf("a commit off the first-parent line: reached %v, %v", ok, err)
		}
		if ok, err := repo.reaches(tip, root, 299); err != nil || ok {
			t.Errorf("300 back within 299 steps: reached %v, %v", ok, err)
		}
	}
}
