package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
