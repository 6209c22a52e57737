//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ERunPlanFile is the CI job with a checked-in task graph: `plan
// --json` writes a file, `run --plan` runs it with no planner call, and a
// bad file exits 2 naming the line before any model call or dispatch.
func TestE2ERunPlanFile(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	out, stderr, code := e.run("plan", "--json", "write greeting files")
	if code != 0 {
		t.Fatalf("plan --json: exit %d\n%s", code, stderr)
	}
	planFile := filepath.Join(e.dir, "plan.json")
	if err := os.WriteFile(planFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	planned := len(e.srv.Requests())

	out, stderr, code = e.run("run", "--plan", planFile, "--yes", "--json")
	if code != 0 {
		t.Fatalf("run --plan: exit %d\n%s", code, stderr)
	}
	for _, req := range e.srv.Requests()[planned:] {
		if hasTool(req, "create_plan") {
			t.Fatal("run --plan called the planner")
		}
	}
	evs := jsonEvents(t, out)
	last := evs[len(evs)-1]
	if last["type"] != "run_end" || last["status"] != "completed" {
		t.Errorf("last event %v, want run_end completed", last)
	}
	if got := e.read("workspace/both.txt"); got != "hello\nworld\n" {
		t.Errorf("both.txt = %q: the plan's tasks did not run in order", got)
	}
	if !strings.Contains(out, `"goal":"Greeting files"`) && !strings.Contains(e.read("reports/summary.md"), "Greeting files") {
		t.Errorf("the goal is not the plan's title")
	}

	yamlFile := filepath.Join(e.dir, "bad.yaml")
	bad := "title: broken\ntasks:\n  - id: a\n    description: A\n  - id: b\n    description: B\n    dependencies: [c]\n"
	if err := os.WriteFile(yamlFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(e.srv.Requests())
	_, stderr, code = e.run("run", "--plan", yamlFile, "--yes")
	if code != 2 || !strings.Contains(stderr, yamlFile+`:5: task "b" depends on unknown task "c"`) {
		t.Errorf("bad plan file: exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(e.srv.Requests()); n != before {
		t.Errorf("a bad plan file made %d model requests", n-before)
	}
	if _, stderr, code = e.run("run", "--plan", filepath.Join(e.dir, "missing.yaml")); code != 2 || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing plan file: exit %d, stderr:\n%s", code, stderr)
	}
	if _, stderr, code = e.run("run"); code != 2 || !strings.Contains(stderr, "--plan FILE") {
		t.Errorf("run without a goal: exit %d, stderr:\n%s", code, stderr)
	}
}
