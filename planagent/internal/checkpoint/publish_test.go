package checkpoint

import (
	"strings"
	"testing"
)

// The publisher on its own: a new branch at a commit, moved forward, never
// over the run's branch nor over commits the run does not hold; pushed to
// a real remote under the same name.
func TestPublisher(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	r := open(t, ws)
	ctx := t.Context()
	first := sh(t, ws, "git rev-parse HEAD")
	write(t, ws, "notes.txt", "four\n")
	sh(t, ws, "git commit -q -am second")
	second := sh(t, ws, "git rev-parse HEAD")
	p := r.Publisher()

	if err := p.SetBranch(ctx, "main", second); err == nil || !strings.Contains(err.Error(), "the branch the run commits to") {
		t.Errorf("publishing over the run's branch: %v", err)
	}
	if err := p.SetBranch(ctx, "bad..name", second); err == nil || !strings.Contains(err.Error(), "not a valid branch name") {
		t.Errorf("a bad name: %v", err)
	}
	if err := p.SetBranch(ctx, "out", first); err != nil {
		t.Fatal(err)
	}
	if err := p.SetBranch(ctx, "out", second); err != nil {
		t.Fatalf("moving the branch forward: %v", err)
	}
	if got := sh(t, ws, "git rev-parse out"); got != second {
		t.Errorf("out is at %s, want %s", got, second)
	}
	sh(t, ws, "git branch theirs "+first+" && git checkout -q theirs && git commit -q --allow-empty -m theirs && git checkout -q main")
	if err := p.SetBranch(ctx, "theirs", second); err == nil || !strings.Contains(err.Error(), "holds commits the run does not") {
		t.Errorf("over someone's commits: %v", err)
	}

	if u := p.RemoteURL(ctx, "origin"); u != "" {
		t.Errorf("no remote yet, its URL is %q", u)
	}
	remote := t.TempDir()
	sh(t, remote, "git init -q --bare")
	sh(t, ws, "git remote add origin "+remote)
	if u := p.RemoteURL(ctx, "origin"); u != remote {
		t.Errorf("the remote's URL is %q, want %q", u, remote)
	}
	if err := p.Push(ctx, "origin", "out"); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, remote, "git rev-parse refs/heads/out"); got != second {
		t.Errorf("the remote's out is at %s, want %s", got, second)
	}
	if err := p.Push(ctx, "nowhere", "out"); err == nil || !strings.Contains(err.Error(), "push out to nowhere") {
		t.Errorf("a push to a missing remote: %v", err)
	}
}
