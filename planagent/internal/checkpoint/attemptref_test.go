package checkpoint

import (
	"strings"
	"testing"
)

// A losing attempt's squash, kept under its ref while its objects are
// still pending, stays whole in the user's repository once the run ends
// (pending emptied, keep refs dropped): the user's own git reads its
// files and its diff, and fsck finds nothing missing. Keeping it again
// (a resume) changes nothing.
func TestKeepAttemptOutlivesTheRun(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	_, c := attempt(t, r, start, "loser", func(dir string) {
		write(t, dir, "notes.txt", "one\nTWO\nthree\n")
		write(t, dir, "deep/new.txt", "a file of the loser's\n")
	})
	if !r.pending.has(c) {
		t.Fatalf("the squash %s is not pending: the test does not test the pending case", c)
	}
	if err := r.KeepAttempt(ctx, "run-1", "parser", 2, c); err != nil {
		t.Fatal(err)
	}
	ref := "refs/codeagent/run-1/parser/attempt-2"
	if err := r.KeepAttempt(ctx, "run-1", "parser", 2, c); err != nil {
		t.Fatalf("keep again: %v", err)
	}
	if err := r.DropKeeps(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.DrainPool(); err != nil {
		t.Fatal(err)
	}
	if r.pending.has(c) {
		t.Fatal("the pending directory still holds the squash")
	}
	if got := sh(t, ws, "git rev-parse "+ref); got != c {
		t.Errorf("%s = %s, want %s", ref, got, c)
	}
	if got := sh(t, ws, "git show "+ref+":deep/new.txt"); got != "a file of the loser's" {
		t.Errorf("the loser's file through the ref = %q", got)
	}
	if diff := sh(t, ws, "git diff --stat HEAD "+ref); !strings.Contains(diff, "2 files changed") {
		t.Errorf("git diff HEAD %s:\n%s", ref, diff)
	}
	sh(t, ws, "git fsck --strict --full --no-dangling")
	// The branch is where it was: a kept loser is not merged.
	if got := sh(t, ws, "git rev-parse HEAD"); got != start {
		t.Errorf("HEAD moved to %s", got)
	}
}

// A bad name is refused with the name in the message, and no ref is made.
func TestKeepAttemptRefusesABadName(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	start, _ := r.Head(t.Context())
	err := r.KeepAttempt(t.Context(), "run..1", "t", 1, start)
	if err == nil || !strings.Contains(err.Error(), "refs/codeagent/run..1/t/attempt-1") {
		t.Fatalf("err = %v, want one naming the bad ref", err)
	}
	if out := sh(t, ws, "git for-each-ref refs/codeagent/"); out != "" {
		t.Errorf("refs made: %s", out)
	}
}
