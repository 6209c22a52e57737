package checkpoint

import (
	"strings"
	"testing"
)

// A submodule is not part of an attempt's copy, so a task cannot change
// it; its commit must come through the task's commit unchanged, and the
// run names it at start.
func TestSubmoduleSurvivesATask(t *testing.T) {
	gitHeavy(t)
	t.Parallel()
	ws := userRepo(t)
	sub := sh(t, ws, "mkdir lib && cd lib && git init -q && git -c user.name=U -c user.email=u@e commit -q --allow-empty -m sub && git rev-parse HEAD")
	sh(t, ws, "git update-index --add --cacheinfo 160000,"+sub+",lib && git commit -q -m 'add lib'")
	r := open(t, ws)
	ctx := t.Context()
	start, _ := r.Head(ctx)
	subs, err := r.Submodules(ctx, start)
	if err != nil || strings.Join(subs, ",") != "lib" {
		t.Fatalf("submodules = %v %v, want [lib]", subs, err)
	}
	_, a := attempt(t, r, start, "a", func(dir string) { write(t, dir, "a.txt", "a\n") })
	if got := sh(t, ws, withPending(r)+"git ls-tree "+a+" lib"); !strings.Contains(got, "160000 commit "+sub) {
		t.Errorf("the task's commit changed the submodule: %q", got)
	}
	if err := r.Advance(ctx, start, a); err != nil {
		t.Fatal(err)
	}
	if st := sh(t, ws, "git status --porcelain"); st != "" {
		t.Errorf("status after the move: %q", st)
	}
}
