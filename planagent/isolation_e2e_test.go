package main

// End-to-end tests of checkpoints and attempt isolation with the local
// runtime: the real binaries, real git, the fake model.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// gitWorkspace is a user's repository with one commit, outside the volumes.
func gitWorkspace(t *testing.T, e *runEnv) string {
	t.Helper()
	ws := filepath.Join(e.dir, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "init", "-q", "-b", "main")
	writeFile(t, ws, "notes.txt", "one\ntwo\nthree\n")
	writeFile(t, ws, ".gitignore", "build/\n")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "the user's commit")
	return ws
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestE2ECheckpointsRefuseADirtyTree(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	writeFile(t, ws, "notes.txt", "my unsaved edit\n")
	writeFile(t, ws, "draft.md", "untracked work\n")
	_, stderr, code := e.run("run", "--yes", "--workspace", ws, "write greeting files")
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, stderr)
	}
	for _, want := range []string{"uncommitted changes", "draft.md", "notes.txt", "git stash -u"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d model requests before the refusal", n)
	}
	if readFile(t, ws, "notes.txt") != "my unsaved edit\n" || readFile(t, ws, "draft.md") != "untracked work\n" {
		t.Error("the user's work changed")
	}
}

const chainPlan = `{"title":"Chain","overview":"Three steps.","tasks":[
 {"id":"a","title":"Step a","description":"TOKEN-A: write a.txt","dependencies":[]},
 {"id":"b","title":"Step b","description":"TOKEN-B: write b.txt","dependencies":["a"]},
 {"id":"c","title":"Step c","description":"TOKEN-C: write c.txt","dependencies":["b"]}]}`

func chainTasks() []scriptTask {
	var ts []scriptTask
	for _, id := range []string{"a", "b", "c"} {
		ts = append(ts, scriptTask{token: "TOKEN-" + strings.ToUpper(id), steps: []llmtest.ToolCall{
			llmtest.Call("write_file", map[string]any{"path": id + ".txt", "content": id + "\n"})}})
	}
	return ts
}

// One commit per task on the user's branch; diff; rollback refuses over
// the user's edit, then goes back; resume redoes what was rolled back.
func TestE2ECheckpointsRollbackAndResume(t *testing.T) {
	f := &fakeModel{plan: chainPlan, tasks: chainTasks()}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	start := gitIn(t, ws, "rev-parse", "HEAD")
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "three steps")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "checkpoints: each task becomes one commit on main") {
		t.Errorf("no checkpoint line:\n%s", stderr)
	}
	if log := gitIn(t, ws, "log", "--format=%s", start+"..HEAD"); log != "c: Step c\nb: Step b\na: Step a" {
		t.Fatalf("history:\n%s", log)
	}
	if body := gitIn(t, ws, "log", "-1", "--format=%b"); !strings.Contains(body, "Finished the task") {
		t.Errorf("commit body %q does not carry the task's summary", body)
	}
	if gitIn(t, ws, "rev-parse", "HEAD~3") != start {
		t.Error("the run's commits are not on top of the start")
	}
	if st := gitIn(t, ws, "status", "--porcelain"); st != "" {
		t.Errorf("workspace not clean after the run: %q", st)
	}
	if keeps := gitIn(t, ws, "for-each-ref", "refs/codeagent/keep/"); keeps != "" {
		t.Errorf("keep refs left after the run:\n%s", keeps)
	}
	if _, err := os.Stat(filepath.Join(e.volumes, "attempts")); err == nil {
		if left, _ := os.ReadDir(filepath.Join(e.volumes, "attempts")); len(left) > 1 {
			t.Errorf("attempt copies left behind: %v", left)
		}
	}

	d, stderr, code := e.run("diff", "b")
	if code != 0 || !strings.Contains(d, "+++ b/b.txt") || strings.Contains(d, "a.txt") {
		t.Errorf("diff b: exit %d\n%s%s", code, d, stderr)
	}
	if d, _, _ := e.run("diff"); !strings.Contains(d, "a.txt") || !strings.Contains(d, "c.txt") {
		t.Errorf("the run's diff:\n%s", d)
	}

	writeFile(t, ws, "c.txt", "the user's edit\n")
	_, stderr, code = e.run("rollback", "--to", "a")
	if code != 2 || !strings.Contains(stderr, "c.txt") || !strings.Contains(stderr, "git stash -u") {
		t.Fatalf("rollback over an edit: exit %d, want 2 naming c.txt and the fix\n%s", code, stderr)
	}
	if readFile(t, ws, "c.txt") != "the user's edit\n" {
		t.Fatal("the user's edit was lost")
	}
	gitIn(t, ws, "checkout", "-q", "--", "c.txt")
	out, stderr, code = e.run("rollback", "--to", "a")
	if code != 0 || !strings.Contains(out, "pending again: b, c") {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, stderr)
	}
	for _, gone := range []string{"b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(ws, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still there after the rollback", gone)
		}
	}
	if log := gitIn(t, ws, "log", "--format=%s", start+"..HEAD"); log != "a: Step a" {
		t.Fatalf("history after the rollback:\n%s", log)
	}
	out, stderr, code = e.run("resume")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	if log := gitIn(t, ws, "log", "--format=%s", start+"..HEAD"); log != "c: Step c\nb: Step b\na: Step a" {
		t.Fatalf("history after resume:\n%s\nresume said:\n%s%s", log, out, stderr)
	}
	if f.startCount("TOKEN-A") != 1 || f.startCount("TOKEN-B") != 2 {
		t.Errorf("starts: a %d, b %d (want 1, 2)", f.startCount("TOKEN-A"), f.startCount("TOKEN-B"))
	}
}

// A failed attempt's files, shell-made ones included, are gone before the
// retry and after the run; the user's tree gets only what was merged.
func TestE2ECheckpointsFailedAttemptLeavesNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "first-attempt-done")
	plan := `{"title":"Flaky","overview":"x","tasks":[{"id":"flaky","title":"Write good.txt","description":"TOKEN-FLAKY: write good.txt","dependencies":[],"acceptance":["test -f good.txt"]}]}`
	script := "if [ -e " + marker + " ]; then ls -A > good.txt; else touch " + marker +
		"; echo junk > junk.txt; mkdir -p build; echo x > build/out; fi"
	f := &fakeModel{plan: plan, decide: `{"action":"retry","reason":"try again","hints":["write good.txt"]}`, tasks: []scriptTask{
		{token: "TOKEN-FLAKY", steps: []llmtest.ToolCall{llmtest.Call("shell_exec", map[string]any{"command": script})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "--max-retries", "1", "write good.txt")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if f.startCount("TOKEN-FLAKY") != 2 {
		t.Fatalf("started %d times, want 2", f.startCount("TOKEN-FLAKY"))
	}
	listing := readFile(t, ws, "good.txt")
	if strings.Contains(listing, "junk.txt") || strings.Contains(listing, "build") {
		t.Errorf("the retry's copy held the failed attempt's files:\n%s", listing)
	}
	for _, gone := range []string{"junk.txt", "build"} {
		if _, err := os.Stat(filepath.Join(ws, gone)); !os.IsNotExist(err) {
			t.Errorf("%s reached the workspace", gone)
		}
	}
	if n := gitIn(t, ws, "rev-list", "--count", "HEAD"); n != "2" {
		t.Errorf("%s commits, want the user's and one for the task", n)
	}
}

// A task that fails for good leaves nothing of its attempt on the disk
// after the run: not in the workspace, not in the volumes (its copy,
// recycled for the next attempt while the run goes on, is deleted at the
// end).
func TestE2ECheckpointsFailedTaskLeavesNothingInTheVolumes(t *testing.T) {
	plan := `{"title":"Doomed","overview":"x","tasks":[{"id":"doomed","title":"Write good.txt","description":"TOKEN-DOOMED: write good.txt","dependencies":[],"acceptance":["test -f good.txt"]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-DOOMED", steps: []llmtest.ToolCall{llmtest.Call("shell_exec", map[string]any{"command": "echo junk > junk.txt"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "--max-retries", "0", "write good.txt")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the task failed)\n%s%s", code, out, stderr)
	}
	for _, root := range []string{ws, e.volumes} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "junk.txt" {
				t.Errorf("the failed attempt's file is still on the disk: %s", p)
			}
			return nil
		})
	}
}

// A repository with a submodule: the run says at start that submodules
// stay as they are, and the task's commit keeps the submodule's commit.
func TestE2ECheckpointsSubmoduleIsNamedAndKept(t *testing.T) {
	f := &fakeModel{plan: chainPlan, tasks: chainTasks()}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	lib := filepath.Join(ws, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, lib, "init", "-q")
	gitIn(t, lib, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "lib")
	sub := gitIn(t, lib, "rev-parse", "HEAD")
	gitIn(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+sub+",lib")
	gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "add lib")
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "three steps")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "submodules are not copied into the tasks' workspaces and stay as they are: lib") {
		t.Errorf("no line naming the submodule:\n%s", stderr)
	}
	if got := gitIn(t, ws, "ls-tree", "HEAD", "lib"); !strings.Contains(got, "160000 commit "+sub) {
		t.Errorf("the submodule changed: %q", got)
	}
}

// The acceptance commands run on the merged tree, not on the attempt's
// copy: two tasks start together from the same base, the first merges, and
// the second's acceptance needs the first's file, which only the merged
// tree has.
func TestE2ECheckpointsAcceptanceRunsOnTheMergedTree(t *testing.T) {
	plan := `{"title":"Pair","overview":"x","tasks":[
 {"id":"first","title":"Write first","description":"TOKEN-FIRST: write first.txt","dependencies":[]},
 {"id":"second","title":"Write second","description":"TOKEN-SECOND: write second.txt","dependencies":[],"acceptance":["test -f first.txt && test -f second.txt"]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-FIRST", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "first.txt", "content": "1\n"})}},
		{token: "TOKEN-SECOND", delay: 1500 * time.Millisecond, steps: []llmtest.ToolCall{
			llmtest.Call("shell_exec", map[string]any{"command": "test ! -e first.txt && echo 2 > second.txt"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	out, stderr, code := e.run("run", "--yes", "--parallel", "2", "--max-retries", "0", "--workspace", ws, "write both")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if f.startCount("TOKEN-SECOND") != 1 {
		t.Errorf("second started %d times, want 1", f.startCount("TOKEN-SECOND"))
	}
	if readFile(t, ws, "first.txt") != "1\n" || readFile(t, ws, "second.txt") != "2\n" {
		t.Error("the workspace lacks a task's file")
	}
}

// Two tasks edit the same line: the one merged second conflicts and is
// redone on the new base, told which file clashed.
func TestE2ECheckpointsConflictIsRedoneOnTheNewBase(t *testing.T) {
	plan := `{"title":"Clash","overview":"x","tasks":[
 {"id":"first","title":"Edit notes first","description":"TOKEN-FIRST: edit notes","dependencies":[]},
 {"id":"second","title":"Edit notes second","description":"TOKEN-SECOND: edit notes","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-FIRST", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "notes.txt", "content": "one\nTWO (first)\nthree\n"})}},
		{token: "TOKEN-SECOND", delay: 1500 * time.Millisecond, steps: []llmtest.ToolCall{
			llmtest.Call("shell_exec", map[string]any{"command": "sed -i 's/^.*two.*$/TWO (second)/I' notes.txt"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	out, stderr, code := e.run("run", "--yes", "--json", "--parallel", "2", "--workspace", ws, "edit notes")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if f.startCount("TOKEN-SECOND") != 2 {
		t.Fatalf("second started %d times, want 2 (redone after the conflict)", f.startCount("TOKEN-SECOND"))
	}
	var hinted bool
	for _, ev := range jsonEvents(t, out) {
		if ev["type"] == "decision" && ev["task_id"] == "second" && strings.Contains(ev["text"].(string), "merge conflict in notes.txt") {
			hinted = true
		}
	}
	if !hinted {
		t.Errorf("no decision naming the conflict:\n%s", out)
	}
	if got := readFile(t, ws, "notes.txt"); got != "one\nTWO (second)\nthree\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if log := gitIn(t, ws, "log", "--format=%s", "-2"); log != "second: Edit notes second\nfirst: Edit notes first" {
		t.Errorf("history:\n%s", log)
	}
}

// kill -9 right after a merge's target is saved, right after the branch
// moved but before the index followed it, and right after the move, then
// resume: no half-merge, no task done twice.
func TestE2ECheckpointsKill9MidMergeThenResume(t *testing.T) {
	for _, point := range []string{"advance", "index", "advanced"} {
		t.Run(point, func(t *testing.T) {
			f := &fakeModel{plan: chainPlan, tasks: chainTasks()}
			e := newRunEnv(t, f)
			ws := gitWorkspace(t, e)
			start := gitIn(t, ws, "rev-parse", "HEAD")
			fp := point
			if point == "index" {
				fp = "advanced#3" // the last merge: no later move fixes the index
			}
			e.env = []string{"CODEAGENT_FAILPOINT=" + fp}
			_, stderr, code := e.run("run", "--yes", "--workspace", ws, "three steps")
			if code != -1 && code != 137 {
				t.Fatalf("exit %d, want killed\n%s", code, stderr)
			}
			if point == "index" {
				// The window inside the move: the branch is at the merge, the
				// index still at the commit before it.
				gitIn(t, ws, "read-tree", "HEAD~1")
			}
			e.env = nil
			out, stderr, code := e.run("resume")
			if code != 0 {
				t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
			}
			if log := gitIn(t, ws, "log", "--format=%s", start+"..HEAD"); log != "c: Step c\nb: Step b\na: Step a" {
				t.Fatalf("history:\n%s", log)
			}
			if st := gitIn(t, ws, "status", "--porcelain"); st != "" {
				t.Errorf("workspace not clean: %q", st)
			}
			for _, tok := range []string{"TOKEN-A", "TOKEN-B", "TOKEN-C"} {
				if n := f.startCount(tok); n != 1 {
					t.Errorf("%s started %d times", tok, n)
				}
			}
		})
	}
}
