package checkpoint

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The long-lived cat-file reads HEAD anew each time: a commit made by
// another git process after the first read is what the next one sees.
func TestHeadFollowsCommitsOfOtherProcesses(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	first, err := r.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		write(t, ws, "more.txt", fmt.Sprint(i))
		want := sh(t, ws, "git add -A && git commit -q -m more && git rev-parse HEAD")
		got, err := r.Head(t.Context())
		if err != nil || got != want || got == first {
			t.Fatalf("Head after commit %d = %s, %v; want %s", i, got, err, want)
		}
	}
	sh(t, ws, "git pack-refs --all && git checkout -q -b other HEAD~1")
	want := sh(t, ws, "git rev-parse HEAD")
	if got, _ := r.Head(t.Context()); got != want {
		t.Fatalf("Head on another branch with packed refs = %s, want %s", got, want)
	}
}

// diffTreesBatch says what `git diff-tree -r --no-renames` says, for every
// kind of change: a file added, removed, changed, made executable, a link,
// a directory replaced by a file and a file by a directory, deep paths,
// names that sort around a directory's.
func TestDiffTreesMatchesGit(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	sh(t, ws, `mkdir -p a/b/c d e x && echo 1 > a/b/c/deep.txt && echo 2 > a.txt && echo 3 > a-b && echo 4 > d/f && echo 5 > e/g && echo 6 > run.sh && ln -s notes.txt link && echo 7 > x/y && echo 8 > gone.txt && git add -A && git commit -q -m before`)
	old := sh(t, ws, "git rev-parse HEAD")
	sh(t, ws, `echo 1b > a/b/c/deep.txt && echo new > a/b/new.txt && rm gone.txt && chmod +x run.sh && rm link && ln -s a.txt link && rm -r d && echo file > d && rm e/g && mkdir -p e/g && echo in > e/g/h && rm -r x && echo x > x && mkdir -p "sp ace" && echo s > "sp ace/f" && git add -A && git commit -q -m after`)
	new := sh(t, ws, "git rev-parse HEAD")
	r := open(t, ws)
	for _, pair := range [][2]string{{old, new}, {new, old}} {
		wantPaths, wantFrom, wantTo := gitDiffTree(t, ws, pair[0], pair[1])
		trees := map[string]bool{}
		paths, from, to, err := r.store.diffTreesBatch(pair[0], pair[1], trees)
		if err != nil {
			t.Fatal(err)
		}
		// The trees found and the blobs of to, with the commit, are every
		// object git says the second commit has that the first lacks
		// (what a move admits from the pending objects).
		have := map[string]bool{pair[1]: true}
		for id := range trees {
			have[id] = true
		}
		for _, e := range to {
			have[e.blob] = true
		}
		for _, line := range strings.Split(sh(t, ws, "git rev-list --objects "+pair[1]+" --not "+pair[0]), "\n") {
			if id, _, _ := strings.Cut(line, " "); id != "" && !have[id] {
				t.Errorf("%s (%s) is not among the objects found", id, line)
			}
		}
		if !reflect.DeepEqual(paths, wantPaths) {
			t.Errorf("paths:\n%q\nwant\n%q", paths, wantPaths)
		}
		if !reflect.DeepEqual(from, wantFrom) || !reflect.DeepEqual(to, wantTo) {
			t.Errorf("entries:\nfrom %v\nto %v\nwant\nfrom %v\nto %v", from, to, wantFrom, wantTo)
		}
	}
}

// gitDiffTree is git's own answer.
func gitDiffTree(t *testing.T, ws, old, new string) ([]string, map[string]entry, map[string]entry) {
	t.Helper()
	out := sh(t, ws, "git diff-tree -r -z --no-renames --no-commit-id "+old+" "+new+" | tr '\\0' '\\n'")
	fields := strings.Split(out, "\n")
	var paths []string
	from, to := map[string]entry{}, map[string]entry{}
	for i := 0; i+1 < len(fields); i += 2 {
		f := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		p := fields[i+1]
		paths = append(paths, p)
		if strings.Trim(f[2], "0") != "" {
			from[p] = entry{mode: f[0], blob: f[2]}
		}
		if strings.Trim(f[3], "0") != "" {
			to[p] = entry{mode: f[1], blob: f[3]}
		}
	}
	return paths, from, to
}

// writeCommit writes the very commit `git commit-tree` writes for the same
// tree, parent, message, identity and time, in both object formats.
func TestWriteCommitIsGitsCommit(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			onlySha256InShort(t, format)
			t.Parallel()
			ws := t.TempDir()
			sh(t, ws, "git init -q --object-format="+format+" -b main && echo x > f && git add f && git -c user.name=U -c user.email=u@e commit -q -m first")
			parent := sh(t, ws, "git rev-parse HEAD")
			tree := sh(t, ws, "git rev-parse HEAD^{tree}")
			r := open(t, ws)
			now := time.Unix(1_800_000_000, 0).In(time.FixedZone("", 2*3600))
			for _, msg := range []string{"t1: write a file", "t2: with a body\n\nwhat it did\n"} {
				got, err := r.store.writeCommit(r.objectsDir, tree, []string{parent}, msg, now)
				if err != nil {
					t.Fatal(err)
				}
				c := "GIT_AUTHOR_DATE='1800000000 +0200' GIT_COMMITTER_DATE='1800000000 +0200' " +
					"GIT_AUTHOR_NAME=CodeAgent GIT_AUTHOR_EMAIL=codeagent@localhost GIT_COMMITTER_NAME=CodeAgent GIT_COMMITTER_EMAIL=codeagent@localhost " +
					"git commit-tree " + tree + " -p " + parent + " -m '" + strings.TrimRight(msg, "\n") + "'"
				if want := sh(t, ws, c); got != want {
					t.Errorf("writeCommit = %s, git commit-tree = %s\n%s", got, want, sh(t, ws, "git cat-file -p "+got))
				}
			}
			sh(t, ws, "git fsck --strict --no-dangling")
			if _, err := os.Stat(r.objectsDir); err != nil {
				t.Fatal(err)
			}
		})
	}
}
