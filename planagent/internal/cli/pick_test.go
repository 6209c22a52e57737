package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// attemptsRun is a finished run, in a real git workspace, whose task
// "parse" had four attempts from the run's start: 1 failed its
// acceptance, 2 passed and was merged (parse.txt "two", and big.txt), 3
// passed, ranked second, its result kept under its ref (parse.txt
// "three"), 4 passed, ranked third, with no result kept. With later, task
// "use" (which depends on parse) was merged on top.
type attemptsRun struct {
	vol, ws, run string
	gitDir       string // the shadow repository's; "" in a git workspace
	l            volume.Layout
	start, two   string // the run's start, attempt 2's commit (merged)
	three, use   string // attempt 3's result (its ref), use's commit
}

func newAttemptsRun(t *testing.T, later bool) *attemptsRun {
	t.Helper()
	return newAttemptsRunIn(t, true, later)
}

// newAttemptsRunIn is newAttemptsRun in a git workspace or (useGit
// false) a plain directory with a shadow repository.
func newAttemptsRunIn(t *testing.T, useGit, later bool) *attemptsRun {
	t.Helper()
	ctx := t.Context()
	r := &attemptsRun{vol: t.TempDir(), ws: t.TempDir()}
	if err := os.WriteFile(filepath.Join(r.ws, "mine.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if useGit {
		r.git(t, "init", "-q", "-b", "main")
		r.git(t, "add", "-A")
		r.git(t, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "start")
	}
	repo, err := checkpoint.Open(ctx, r.ws, checkpoint.ShadowDir(filepath.Join(r.vol, "checkpoints"), r.ws), []string{r.vol})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	if !useGit {
		r.gitDir = repo.GitDir()
	}
	r.start = r.git(t, "rev-parse", "HEAD")
	p := &plan.Plan{Title: "parse", Overview: "a parser", Tasks: []plan.Task{
		{ID: "parse", Title: "Parser", Description: "write parse.txt", Acceptance: []string{"test -f parse.txt"}},
		{ID: "use", Title: "Use it", Description: "write use.txt", Dependencies: []string{"parse"}},
	}}
	now := time.Now()
	st, err := runrecord.NewState(runrecord.NewRunID(now), "a parser", p, llm.Usage{}, now)
	if err != nil {
		t.Fatal(err)
	}
	r.run = st.RunID
	// The attempts' results as the run squashes them: one commit each on
	// the state its copy was made from, made here with git itself.
	r.two = r.commitOn(t, r.start, map[string]string{"parse.txt": "two\n", "big.txt": strings.Repeat("a long way round\n", 50)}, "parse: Parser")
	r.three = r.commitOn(t, r.start, map[string]string{"parse.txt": "three\n"}, "parse: Parser")
	if err := repo.Advance(ctx, r.start, r.two); err != nil {
		t.Fatal(err)
	}
	r.git(t, "update-ref", checkpoint.AttemptRef(r.run, "parse", 3), r.three)
	st.Settings = &runrecord.Settings{Workspace: r.ws}
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: r.start, Head: r.two, Merges: 1}
	st.Tasks[0].Status, st.Tasks[0].Attempts = taskgraph.Completed, 4
	in := st.Info["parse"]
	in.Commit, in.Checkpoint, in.Merge = r.two, r.two, 1
	in.Results = []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed", Error: `acceptance command "test -f parse.txt" exited 1`},
		{Attempt: 2, Status: "completed", Rank: 1},
		{Attempt: 3, Status: "completed", Rank: 2},
		{Attempt: 4, Status: "completed", Rank: 3},
	}
	if later {
		r.use = r.commitOn(t, r.two, map[string]string{"use.txt": "uses two\n"}, "use: Use it")
		if err := repo.Advance(ctx, r.two, r.use); err != nil {
			t.Fatal(err)
		}
		st.Tasks[1].Status, st.Tasks[1].Attempts = taskgraph.Completed, 1
		st.Info["use"].Commit, st.Info["use"].Checkpoint, st.Info["use"].Merge = r.use, r.use, 2
		st.Info["use"].Results = []runrecord.AttemptResult{{Attempt: 1, Status: "completed", Rank: 1}}
		st.Checkpoints.Head, st.Checkpoints.Merges = r.use, 2
	}
	saveCompleted(t, r.vol, r.ws, st, now)
	if r.l, err = volume.New(r.vol, r.ws); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *attemptsRun) git(t *testing.T, args ...string) string {
	t.Helper()
	return r.gitEnv(t, nil, args...)
}

func (r *attemptsRun) gitEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	where := []string{"-C", r.ws}
	if r.gitDir != "" {
		where = append(where, "--git-dir", r.gitDir, "--work-tree", r.ws)
	}
	c := exec.Command("git", append(where, args...)...)
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitOn commits parent's tree with files written over it, through an
// index of its own: the user's index and files are not touched.
func (r *attemptsRun) commitOn(t *testing.T, parent string, files map[string]string, msg string) string {
	t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index"),
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com"}
	r.gitEnv(t, env, "read-tree", parent)
	for name, content := range files {
		f := filepath.Join(t.TempDir(), "blob")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		blob := r.git(t, "hash-object", "-w", f)
		r.gitEnv(t, env, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+name)
	}
	tree := r.gitEnv(t, env, "write-tree")
	return r.gitEnv(t, env, "commit-tree", tree, "-p", parent, "-m", msg)
}

func (r *attemptsRun) planagent(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runPlanagent(t, r.vol, r.ws, args...)
}

func (r *attemptsRun) state(t *testing.T) *runrecord.State {
	t.Helper()
	st, err := runrecord.LoadState(r.l, r.run, false)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (r *attemptsRun) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.ws, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// diff --attempt shows every attempt that left a result: the merged one
// as the task's commit, another from its ref against the state its copy
// was made from; one without a result is refused saying how it ended.
func TestDiffAttempt(t *testing.T) {
	t.Parallel()
	r := newAttemptsRun(t, true)
	code, out, errOut := r.planagent(t, "diff", r.run, "parse", "--attempt", "3")
	if code != 0 || !strings.Contains(out, "+three") || strings.Contains(out, "big.txt") || strings.Contains(out, "use.txt") {
		t.Fatalf("diff --attempt 3: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = r.planagent(t, "diff", r.run, "parse", "--attempt", "2")
	if code != 0 || !strings.Contains(out, "+two") || !strings.Contains(out, "big.txt") {
		t.Fatalf("diff --attempt 2 (the merged one): exit %d\n%s%s", code, out, errOut)
	}
	for n, want := range map[string]string{
		"1": `attempt 1 of task parse left no result to show (failed: acceptance command "test -f parse.txt" exited 1)`,
		"4": "attempt 4 of task parse left no result to show (completed)",
		"9": "task parse has no attempt 9; its attempts: 1 (failed), 2 (completed), 3 (completed), 4 (completed)",
	} {
		code, out, errOut = r.planagent(t, "diff", r.run, "parse", "--attempt", n)
		if code != cmdutil.ExitUsage || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("diff --attempt %s: exit %d, stdout %q\n%s\nwant %q", n, code, out, errOut, want)
		}
	}
	if code, _, errOut = r.planagent(t, "diff", r.run, "use", "--attempt", "2"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "task use has no attempt 2; its attempts: 1 (completed)") {
		t.Errorf("diff use --attempt 2: exit %d\n%s", code, errOut)
	}
}

// pick replaces the merged attempt by another passing one: the branch's
// commit for the task becomes attempt 3's result on the same parent, the
// replaced one is kept as its attempt's ref, the state and the decisions
// say so, and the user's uncommitted work (a changed file, an untracked
// one) is left as it was. Picking back works the same way.
func TestPick(t *testing.T) {
	t.Parallel()
	r := newAttemptsRun(t, false)
	if err := os.WriteFile(filepath.Join(r.ws, "mine.txt"), []byte("the user's, changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.ws, "notes.txt"), []byte("not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := r.planagent(t, "pick", r.run, "parse", "--attempt", "3")
	if code != 0 {
		t.Fatalf("pick: exit %d\n%s%s", code, out, errOut)
	}
	head := r.git(t, "rev-parse", "refs/heads/main")
	if !strings.Contains(out, "task parse: attempt 3 is merged (commit "+head[:12]+")") || !strings.Contains(errOut, "decision pick: attempt 3 merged in place of attempt 2") {
		t.Errorf("pick said:\n%s%s", out, errOut)
	}
	if parent := r.git(t, "rev-parse", head+"^"); parent != r.start {
		t.Errorf("the task's commit is on %s, want the run's start %s", parent, r.start)
	}
	if got := r.git(t, "show", head+":parse.txt"); got != "three" {
		t.Errorf("parse.txt in the branch: %q", got)
	}
	if msg := r.git(t, "log", "-1", "--format=%s", head); msg != "parse: Parser" {
		t.Errorf("the commit's message: %q", msg)
	}
	if got := r.git(t, "rev-parse", checkpoint.AttemptRef(r.run, "parse", 2)); got != r.two {
		t.Errorf("attempt 2's ref: %s, want its commit %s", got, r.two)
	}
	if got, big := r.read(t, "parse.txt"), r.read(t, "big.txt"); got != "three\n" || big != "" {
		t.Errorf("the workspace: parse.txt %q, big.txt %q (want it gone)", got, big)
	}
	if got, notes := r.read(t, "mine.txt"), r.read(t, "notes.txt"); got != "the user's, changed\n" || notes != "not committed\n" {
		t.Errorf("the user's work: mine.txt %q, notes.txt %q", got, notes)
	}
	if s := r.git(t, "status", "--porcelain"); s != "M mine.txt\n?? notes.txt" && s != " M mine.txt\n?? notes.txt" {
		t.Errorf("git status after the pick: %q", s)
	}
	st := r.state(t)
	in := st.Info["parse"]
	if in.Commit != head || in.Checkpoint != head || st.Checkpoints.Head != head || st.Checkpoints.Rollback != nil || st.Checkpoints.Merges != 1 {
		t.Errorf("state: commit %s checkpoint %s head %s journal %+v merges %d, want %s", in.Commit, in.Checkpoint, st.Checkpoints.Head, st.Checkpoints.Rollback, st.Checkpoints.Merges, head)
	}
	ranks := map[int]int{}
	for _, a := range in.Results {
		ranks[a.Attempt] = a.Rank
		if a.Picked != (a.Attempt == 3) {
			t.Errorf("attempt %d picked %v", a.Attempt, a.Picked)
		}
	}
	if ranks[1] != 0 || ranks[2] != 2 || ranks[3] != 1 || ranks[4] != 3 {
		t.Errorf("ranks %v, want 3 first, 2 second", ranks)
	}
	if n := len(st.Decisions); n != 1 || st.Decisions[0].Action != "pick" || st.Decisions[0].Task != "parse" || !strings.Contains(st.Decisions[0].Reason, checkpoint.AttemptRef(r.run, "parse", 2)) {
		t.Errorf("decisions %+v", st.Decisions)
	}
	if st.Status != runrecord.RunCompleted {
		t.Errorf("run status %s, want it still completed", st.Status)
	}
	// The replaced attempt is now one of the others: diff shows it from its ref.
	if code, out, _ = r.planagent(t, "diff", r.run, "parse", "--attempt", "2"); code != 0 || !strings.Contains(out, "+two") {
		t.Errorf("diff --attempt 2 after the pick: exit %d\n%s", code, out)
	}
	if code, out, _ = r.planagent(t, "diff", r.run, "parse"); code != 0 || !strings.Contains(out, "+three") {
		t.Errorf("the task's diff after the pick: exit %d\n%s", code, out)
	}
	// The same pick again changes nothing.
	if code, _, errOut = r.planagent(t, "pick", r.run, "parse", "--attempt", "3"); code != 0 || !strings.Contains(errOut, "merged attempt already") {
		t.Errorf("the same pick again: exit %d\n%s", code, errOut)
	}
	if h := r.git(t, "rev-parse", "HEAD"); h != head {
		t.Errorf("the same pick again moved HEAD to %s", h)
	}
	// And back: attempt 2's commit is where it was.
	if code, out, errOut = r.planagent(t, "pick", "parse", "--attempt", "2"); code != 0 {
		t.Fatalf("pick back: exit %d\n%s%s", code, out, errOut)
	}
	if h := r.git(t, "rev-parse", "HEAD"); h != r.two {
		t.Errorf("picked back to %s, want attempt 2's commit %s", h, r.two)
	}
	if got := r.read(t, "parse.txt"); got != "two\n" {
		t.Errorf("parse.txt after picking back: %q", got)
	}
}

// What pick refuses, exit 2 with one line saying why and what to do,
// changing nothing: another attempt once a later task was merged on the
// result (until a rollback to the task, after which it is allowed), an
// attempt that failed, one that is not there, one with no result kept, a
// move over the user's change, a task in progress on the result.
func TestPickRefused(t *testing.T) {
	t.Parallel()
	r := newAttemptsRun(t, true)
	refused := func(want string, args ...string) {
		t.Helper()
		before := r.git(t, "rev-parse", "HEAD")
		stateBefore, err := os.ReadFile(filepath.Join(r.l.Run(r.run), "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut := r.planagent(t, append([]string{"pick", r.run}, args...)...)
		if code != cmdutil.ExitUsage || out != "" || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Fatalf("pick %v: exit %d, stdout %q, stderr:\n%s\nwant one line with %q", args, code, out, errOut, want)
		}
		if h := r.git(t, "rev-parse", "HEAD"); h != before {
			t.Fatalf("a refused pick moved HEAD from %s to %s", before, h)
		}
		if b, _ := os.ReadFile(filepath.Join(r.l.Run(r.run), "state.json")); string(b) != string(stateBefore) {
			t.Fatalf("a refused pick changed the run's state")
		}
	}
	refused("task parse's result is built on already (use merged after it): roll back to it first (`planagent rollback "+r.run+" --to parse` makes them pending again), pick, then `planagent resume "+r.run+"`", "parse", "--attempt", "3")
	refused(`attempt 1 of task parse did not pass its acceptance (failed: acceptance command "test -f parse.txt" exited 1)`, "parse", "--attempt", "1")
	refused("task parse has no attempt 7; its attempts: 1 (failed), 2 (completed), 3 (completed), 4 (completed)", "parse", "--attempt", "7")
	refused("run "+r.run+` has no task "nope"`, "nope", "--attempt", "1")

	// The way out the refusal names: roll back to the task, then pick.
	if code, out, errOut := r.planagent(t, "rollback", r.run, "--to", "parse"); code != 0 {
		t.Fatalf("rollback --to parse: exit %d\n%s%s", code, out, errOut)
	}
	refused("attempt 4 of task parse passed, but its result is not in the repository (no "+checkpoint.AttemptRef(r.run, "parse", 4)+")", "parse", "--attempt", "4")
	refused("task use is pending: only a completed task's merged attempt can be replaced", "use", "--attempt", "1")

	// The user's change to a file the pick writes.
	if err := os.WriteFile(filepath.Join(r.ws, "parse.txt"), []byte("the user's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("the workspace has changes since the run's last checkpoint: parse.txt; stash them (`git stash -u`) or revert them first (nothing was picked)", "parse", "--attempt", "3")
	if got := r.read(t, "parse.txt"); got != "the user's own\n" {
		t.Fatalf("the user's parse.txt became %q", got)
	}
	r.git(t, "checkout", "--", "parse.txt")

	// A task in progress on a copy of the result (a run cut short).
	st := r.state(t)
	for i := range st.Tasks {
		if st.Tasks[i].ID == "use" {
			st.Tasks[i].Status, st.Tasks[i].Attempts = taskgraph.InProgress, 2
		}
	}
	st.Info["use"].Base = r.two
	st.Status = runrecord.RunInterrupted
	if err := st.Save(r.l, time.Now()); err != nil {
		t.Fatal(err)
	}
	refused("task parse's result is built on already (use in progress on a copy of it): `planagent rollback "+r.run+" --to parse` makes them pending again", "parse", "--attempt", "3")
	st.Info["use"].Base = r.start // copied before parse merged: not built on it
	if err := st.Save(r.l, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := r.planagent(t, "pick", r.run, "parse", "--attempt", "3"); code != 0 {
		t.Fatalf("pick after the rollback: exit %d\n%s%s", code, out, errOut)
	}
	if got := r.read(t, "parse.txt"); got != "three\n" {
		t.Fatalf("parse.txt after the pick: %q", got)
	}
}

// A pick killed once its journal is saved (before the branch or a file
// moved) is finished by the next pick: one commit for the task, attempt
// 3's, the journal gone.
func TestPickInterruptedThenFinished(t *testing.T) {
	t.Parallel()
	r := newAttemptsRun(t, false)
	c := exec.Command(os.Args[0], "-test.run=^$")
	args := []string{"pick", r.run, "parse", "--attempt", "3", "--volumes", r.vol, "--workspace", r.ws}
	c.Env = append(os.Environ(), planagentHelperEnv+"="+strings.Join(args, "\n"), "CODEAGENT_FAILPOINT=pick-journaled")
	err := c.Run()
	var ws syscall.WaitStatus
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		ws, _ = ee.Sys().(syscall.WaitStatus)
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the pick was not killed at its failpoint: %v", err)
	}
	st := r.state(t)
	j := st.Checkpoints.Rollback
	if j == nil || j.Pick != 3 || j.Task != "parse" || j.From != r.two || r.git(t, "rev-parse", "HEAD") != r.two {
		t.Fatalf("after the kill: journal %+v, HEAD %s (want still %s)", j, r.git(t, "rev-parse", "HEAD"), r.two)
	}
	// Another command that moves the branch finishes it first, naming it.
	code, out, errOut := r.planagent(t, "pick", r.run, "parse", "--attempt", "3")
	if code != 0 || !strings.Contains(errOut, "finishing the pick that was interrupted") {
		t.Fatalf("pick again: exit %d\n%s%s", code, out, errOut)
	}
	head := r.git(t, "rev-parse", "HEAD")
	if head != j.To || r.git(t, "rev-parse", head+"^") != r.start || r.read(t, "parse.txt") != "three\n" {
		t.Fatalf("after the finished pick: HEAD %s (want %s), parse.txt %q", head, j.To, r.read(t, "parse.txt"))
	}
	if s := r.git(t, "status", "--porcelain"); s != "" {
		t.Fatalf("git status: %q", s)
	}
	st = r.state(t)
	if st.Checkpoints.Rollback != nil || st.Checkpoints.Head != head || st.Info["parse"].Commit != head || len(st.Decisions) != 1 {
		t.Fatalf("state: journal %+v head %s commit %s decisions %d", st.Checkpoints.Rollback, st.Checkpoints.Head, st.Info["parse"].Commit, len(st.Decisions))
	}
	if got := r.git(t, "rev-parse", checkpoint.AttemptRef(r.run, "parse", 2)); got != r.two {
		t.Fatalf("attempt 2's ref: %s", got)
	}
}

// In a workspace that is not a git repository the run's commits are in
// its shadow repository, and pick works there the same way.
func TestPickShadow(t *testing.T) {
	t.Parallel()
	r := newAttemptsRunIn(t, false, false)
	if _, err := os.Stat(filepath.Join(r.ws, ".git")); err == nil {
		t.Fatal("the fixture made the workspace a git repository")
	}
	if code, out, errOut := r.planagent(t, "diff", r.run, "parse", "--attempt", "3"); code != 0 || !strings.Contains(out, "+three") {
		t.Fatalf("diff --attempt 3: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := r.planagent(t, "pick", r.run, "parse", "--attempt", "3"); code != 0 {
		t.Fatalf("pick: exit %d\n%s%s", code, out, errOut)
	}
	head := r.git(t, "rev-parse", "HEAD")
	if r.git(t, "rev-parse", head+"^") != r.start || r.read(t, "parse.txt") != "three\n" || r.read(t, "big.txt") != "" || r.read(t, "mine.txt") != "the user's\n" {
		t.Fatalf("after the pick: HEAD %s, parse.txt %q, big.txt %q, mine.txt %q", head, r.read(t, "parse.txt"), r.read(t, "big.txt"), r.read(t, "mine.txt"))
	}
	if got := r.git(t, "rev-parse", checkpoint.AttemptRef(r.run, "parse", 2)); got != r.two {
		t.Fatalf("attempt 2's ref: %s", got)
	}
	if st := r.state(t); st.Info["parse"].Commit != head || st.Checkpoints.Head != head {
		t.Fatalf("state: commit %s head %s, want %s", st.Info["parse"].Commit, st.Checkpoints.Head, head)
	}
}
