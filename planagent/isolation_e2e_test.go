//go:build e2e

package main

// End-to-end tests of checkpoints and attempt isolation with the local
// runtime: the real binaries, real git, the fake model. Some scenarios run
// in containers too (docker_isolation_e2e_test.go).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
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

// e2eRuntime is newRunEnv for runs with one runtime: the isolation
// scenarios run with the local one here and with the docker one in
// docker_isolation_e2e_test.go.
type e2eRuntime func(t *testing.T, f *fakeModel) *runEnv

func localRuntime(t *testing.T, f *fakeModel) *runEnv { return newRunEnv(t, f) }

// assertAttemptContainers checks that a run in containers used n attempt
// containers (one per attempt) and removed them all; a local run has none.
func (e *runEnv) assertAttemptContainers(n int) {
	e.t.Helper()
	if e.attempts == nil {
		return
	}
	if created := e.attempts.settled(e.t); len(created) != n {
		e.t.Errorf("%d attempt containers, want %d: %v", len(created), n, e.attempts.named(created))
	}
}

// A failed attempt's files, shell-made ones included, are gone before the
// retry and after the run; the user's tree gets only what was merged.
func TestE2ECheckpointsFailedAttemptLeavesNothing(t *testing.T) {
	failedAttemptLeavesNothing(t, localRuntime)
}

func failedAttemptLeavesNothing(t *testing.T, rt e2eRuntime) {
	for _, tc := range []struct {
		name string
		// agentFails: the model fails after the shell step, so the
		// attempt's copy, the only one thrown away, is the one recycled
		// for the retry. Otherwise the attempt completes without good.txt
		// and its acceptance fails (its copy and the acceptance's copy of
		// the merged tree, junk.txt included, are thrown away).
		agentFails bool
	}{{"the agent fails", true}, {"its acceptance fails", false}} {
		t.Run(tc.name, func(t *testing.T) {
			plan := `{"title":"Flaky","overview":"x","tasks":[{"id":"flaky","title":"Write good.txt","description":"TOKEN-FLAKY: write good.txt","dependencies":[],"acceptance":["test -f good.txt"]}]}`
			// The retry's command carries the decider's hint, and with it
			// the token of the retry's script (listed first: the retry's
			// command holds both tokens).
			look := "echo look-around; for f in junk.txt build build/out; do test -e $f && echo LEFT-$f; done; ls -A | tee good.txt"
			f := &fakeModel{plan: plan, decide: `{"action":"retry","reason":"try again","hints":["TOKEN-RETRY: write good.txt"]}`, tasks: []scriptTask{
				{token: "TOKEN-RETRY", steps: []llmtest.ToolCall{llmtest.Call("shell_exec", map[string]any{"command": look})}},
				// A shell-made file and one under the ignored build/.
				{token: "TOKEN-FLAKY", failAtEnd: tc.agentFails, steps: []llmtest.ToolCall{
					llmtest.Call("shell_exec", map[string]any{"command": "echo junk > junk.txt; mkdir -p build; echo x > build/out"})}},
			}}
			e := rt(t, f)
			ws := gitWorkspace(t, e)
			out, stderr, code := e.run("run", "--yes", "--workspace", ws, "--max-retries", "1", "write good.txt")
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			if f.startCount("TOKEN-FLAKY") != 1 || f.startCount("TOKEN-RETRY") != 1 {
				t.Fatalf("first attempt started %d times, retry %d, want 1 and 1", f.startCount("TOKEN-FLAKY"), f.startCount("TOKEN-RETRY"))
			}
			// What the retry's shell saw, as the model was told.
			seen := e.toolResult("look-around")
			if strings.Contains(seen, "LEFT-") || !strings.Contains(seen, "notes.txt") || !strings.HasSuffix(seen, "exit code: 0") {
				t.Errorf("the retry's shell saw the failed attempt's files (or not the user's):\n%s", seen)
			}
			listing := readFile(t, ws, "good.txt")
			if strings.Contains(listing, "junk.txt") || strings.Contains(listing, "build") {
				t.Errorf("the retry's copy held the failed attempt's files:\n%s", listing)
			}
			for _, root := range []string{ws, e.volumes} {
				_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
					if err == nil && (d.Name() == "junk.txt" || strings.HasSuffix(p, "/build/out")) {
						t.Errorf("the failed attempt's file is still on the disk: %s", p)
					}
					return nil
				})
			}
			if n := gitIn(t, ws, "rev-list", "--count", "HEAD"); n != "2" {
				t.Errorf("%s commits, want the user's and one for the task", n)
			}
			// The attempt whose acceptance failed made a commit: it is kept
			// under its ref, readable with the user's git; one that
			// reported failure made none.
			refs := gitIn(t, ws, "for-each-ref", "--format=%(refname)", "refs/codeagent/")
			if tc.agentFails {
				if refs != "" {
					t.Errorf("refs of an attempt that made no commit: %s", refs)
				}
			} else {
				if !strings.HasSuffix(refs, "/flaky/attempt-1") || strings.Contains(refs, "\n") {
					t.Fatalf("refs %q, want the failed attempt 1's", refs)
				}
				if got := gitIn(t, ws, "show", refs+":junk.txt"); got != "junk" {
					t.Errorf("junk.txt through %s: %q", refs, got)
				}
				gitIn(t, ws, "fsck", "--no-dangling")
			}
			e.assertAttemptContainers(2)
		})
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
	conflictIsRedoneOnTheNewBase(t, localRuntime, 500*time.Millisecond)
}

// conflictIsRedoneOnTheNewBase: wait is how long second waits after first's
// last model call, so that first has merged by then (its results reach the
// host later on some runtimes).
func conflictIsRedoneOnTheNewBase(t *testing.T, rt e2eRuntime, wait time.Duration) {
	plan := `{"title":"Clash","overview":"x","tasks":[
 {"id":"first","title":"Edit notes first","description":"TOKEN-FIRST: edit notes","dependencies":[]},
 {"id":"second","title":"Edit notes second","description":"TOKEN-SECOND: edit notes","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-FIRST", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "notes.txt", "content": "one\nTWO (first)\nthree\n"})}},
		// Second edits once first has finished (and, a moment later,
		// merged), so it is the one that conflicts.
		{token: "TOKEN-SECOND", after: "TOKEN-FIRST", delay: wait, steps: []llmtest.ToolCall{
			// cat: the redone attempt's copy holds first's line.
			llmtest.Call("shell_exec", map[string]any{"command": "cat notes.txt; sed -i 's/^.*two.*$/TWO (second)/I' notes.txt"})}},
	}}
	e := rt(t, f)
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
	// The redone attempt started from the new base: its shell read first's line.
	var redone bool
	for _, req := range e.srv.Requests() {
		for _, m := range req.Messages {
			redone = redone || (m.Role == llm.RoleTool && strings.HasPrefix(m.Content, "one\nTWO (first)\nthree\n"))
		}
	}
	if !redone {
		t.Error("no attempt of second saw first's edit in its copy")
	}
	e.assertAttemptContainers(3)
}

// In an attempt's copy `git status` and `git diff` work and show the
// agent's change against the run's base, and the shell runs in the copy
// (attempts/<run>/<id>.<n>), not in the workspace.
func TestE2ECheckpointsGitWorksInTheAttemptsCopy(t *testing.T) {
	gitWorksInTheAttemptsCopy(t, localRuntime)
}

func gitWorksInTheAttemptsCopy(t *testing.T, rt e2eRuntime) {
	plan := `{"title":"Edit","overview":"x","tasks":[{"id":"edit","title":"Edit notes","description":"TOKEN-EDIT: edit notes","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-EDIT", steps: []llmtest.ToolCall{
		llmtest.Call("write_file", map[string]any{"path": "notes.txt", "content": "one\nTWO\nthree\n"}),
		llmtest.Call("shell_exec", map[string]any{"command": "pwd && git status && git diff # git-in-copy"}),
	}}}}
	e := rt(t, f)
	ws := gitWorkspace(t, e)
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "edit notes")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	runID, _ := e.runState()
	res := e.toolResult("git-in-copy")
	pwd, _, _ := strings.Cut(res, "\n")
	if !strings.HasSuffix(pwd, "/attempts/"+runID+"/edit.1") {
		t.Errorf("the shell ran in %q, want the attempt's copy attempts/%s/edit.1", pwd, runID)
	}
	for _, want := range []string{"modified:   notes.txt", "--- a/notes.txt", "+++ b/notes.txt", "-two", "+TWO", "exit code: 0"} {
		if !strings.Contains(res, want) {
			t.Errorf("git status && git diff in the copy: no %q in\n%s", want, res)
		}
	}
	if got := readFile(t, ws, "notes.txt"); got != "one\nTWO\nthree\n" {
		t.Errorf("notes.txt = %q", got)
	}
	e.assertAttemptContainers(1)
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

// A workspace that is not a git repository: the run says it keeps its
// checkpoints in a shadow repository under the volumes, the workspace gets
// no .git, each task is a commit there on top of a snapshot of the user's
// files, and those files are left as they were (not even rewritten).
func TestE2ECheckpointsShadowRepository(t *testing.T) {
	f := &fakeModel{plan: chainPlan, tasks: chainTasks()}
	e := newRunEnv(t, f)
	ws := filepath.Join(e.dir, "plain")
	writeFile(t, ws, "mine.txt", "the user's file\n")
	writeFile(t, ws, "sub/run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(ws, "sub", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string]os.FileInfo{}
	for _, name := range []string{"mine.txt", "sub/run.sh"} {
		fi, err := os.Stat(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = fi
	}
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "three steps")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	shadows, _ := filepath.Glob(filepath.Join(e.volumes, "checkpoints", "*.git"))
	if len(shadows) != 1 {
		t.Fatalf("shadow repositories: %v, want one", shadows)
	}
	shadow := shadows[0]
	if want := "checkpoints: each task becomes one commit in the shadow repository " + shadow + " (the workspace is not a git repository and gets no .git)"; !strings.Contains(stderr, want) {
		t.Errorf("no start line %q:\n%s", want, stderr)
	}
	_ = filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == ".git" {
			t.Errorf("the workspace got %s", p)
		}
		return nil
	})
	if log := gitIn(t, ws, "--git-dir", shadow, "log", "--format=%s"); log != "c: Step c\nb: Step b\na: Step a\nworkspace before the first run" {
		t.Errorf("the shadow repository's history:\n%s", log)
	}
	if got := gitIn(t, ws, "--git-dir", shadow, "show", "HEAD~2:a.txt"); got != "a" {
		t.Errorf("a's commit holds a.txt = %q", got)
	}
	if got := gitIn(t, ws, "--git-dir", shadow, "ls-tree", "-r", "--name-only", "HEAD~3"); got != "mine.txt\nsub/run.sh" {
		t.Errorf("the snapshot of the user's files holds:\n%s", got)
	}
	for _, id := range []string{"a", "b", "c"} {
		if readFile(t, ws, id+".txt") != id+"\n" {
			t.Errorf("%s.txt not in the workspace", id)
		}
	}
	for name, was := range before {
		fi, err := os.Stat(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != was.Mode() || !fi.ModTime().Equal(was.ModTime()) || fi.Size() != was.Size() {
			t.Errorf("%s changed: %v %v %d, was %v %v %d", name, fi.Mode(), fi.ModTime(), fi.Size(), was.Mode(), was.ModTime(), was.Size())
		}
	}
	if readFile(t, ws, "mine.txt") != "the user's file\n" || readFile(t, ws, "sub/run.sh") != "#!/bin/sh\necho hi\n" {
		t.Error("the user's files changed")
	}
	if d, stderr, code := e.run("diff", "b"); code != 0 || !strings.Contains(d, "+++ b/b.txt") || strings.Contains(d, "mine.txt") {
		t.Errorf("diff b in shadow mode: exit %d\n%s%s", code, d, stderr)
	}
}

// The project's own codeagent.yaml, not committed, does not block the run
// as uncommitted work; the run says to ignore it.
func TestE2ECheckpointsConfigFileInTheProjectIsNotWork(t *testing.T) {
	plan := `{"title":"Edit","overview":"x","tasks":[{"id":"edit","title":"Edit notes","description":"TOKEN-EDIT: edit notes","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-EDIT", steps: []llmtest.ToolCall{
		llmtest.Call("write_file", map[string]any{"path": "notes.txt", "content": "edited\n"})}}}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	writeFile(t, ws, "codeagent.yaml", "max_retries: 0\n")
	_, stderr, code := e.run("run", "--yes", "--workspace", ws, "--config", filepath.Join(ws, "codeagent.yaml"), "edit notes")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "the config file codeagent.yaml is not committed") {
		t.Errorf("no word about the config file:\n%s", stderr)
	}
	if files := gitIn(t, ws, "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, "codeagent.yaml") {
		t.Errorf("the config file was committed:\n%s", files)
	}
	// Any other untracked file still stops the run.
	writeFile(t, ws, "draft.txt", "mine\n")
	if _, stderr, code := e.run("run", "--yes", "--workspace", ws, "--config", filepath.Join(ws, "codeagent.yaml"), "edit notes"); code != 2 || !strings.Contains(stderr, "draft.txt") {
		t.Errorf("an untracked file of the user's: exit %d\n%s", code, stderr)
	}
}
