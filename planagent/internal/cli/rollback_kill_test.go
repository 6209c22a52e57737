package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// planagentHelperEnv makes the test binary a planagent process running the
// arguments in it (one per line), to be killed.
const planagentHelperEnv = "CODEAGENT_TEST_PLANAGENT_ARGS"

// maybeRunPlanagent runs planagent with the arguments of
// planagentHelperEnv and exits, when it is set.
func maybeRunPlanagent() {
	args := os.Getenv(planagentHelperEnv)
	if args == "" {
		return
	}
	f := &cmdutil.Factory{
		IO:     cmdutil.IOStreams{In: strings.NewReader(""), Out: os.Stdout, Err: os.Stderr, IsTerminal: func() bool { return false }},
		Getenv: func(string) string { return "" },
	}
	os.Exit(cmdutil.Main(f, NewCmdRoot(f), strings.Split(args, "\n")))
}

// bigRun is a run of two completed tasks that wrote 750 files (so that
// a rollback's move takes a while), in a git workspace that also holds a
// file the user ignores.
func bigRun(t *testing.T) (vol, ws string, repo *checkpoint.Repo, st *runrecord.State) {
	t.Helper()
	ctx := t.Context()
	vol, ws = t.TempDir(), t.TempDir()
	write := func(dir, name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ws, "notes.txt", "one\ntwo\n")
	write(ws, ".gitignore", "secret.env\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write(ws, "secret.env", "KEY=the user's, ignored\n")
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(vol, "checkpoints"), ws), []string{vol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	start, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Title: "many files", Tasks: []plan.Task{
		{ID: "a", Title: "Generate", Description: "write gen/"},
		{ID: "b", Title: "More", Description: "write more/ and change notes"},
	}}
	now := time.Now()
	if st, err = runrecord.NewState(runrecord.NewRunID(now), "many files", p, llm.Usage{}, now); err != nil {
		t.Fatal(err)
	}
	st.Settings = &runrecord.Settings{Workspace: ws}
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: start, Head: start}
	work := map[string]func(dir string){
		"a": func(dir string) {
			for i := range 500 {
				write(dir, fmt.Sprintf("gen/d%02d/f%04d.txt", i%30, i), fmt.Sprintf("generated %d\n", i))
			}
		},
		"b": func(dir string) {
			for i := range 250 {
				write(dir, fmt.Sprintf("more/m%04d.txt", i), fmt.Sprintf("more %d\n", i))
			}
			write(dir, "notes.txt", "one\nTWO\nthree\n")
		},
	}
	for i, id := range []string{"a", "b"} {
		base := st.Checkpoints.Head
		dir := filepath.Join(t.TempDir(), id)
		if err := repo.NewCopy(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
		work[id](dir)
		c, _, err := repo.Squash(ctx, dir, base, id+": step", "did "+id)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Advance(ctx, base, c); err != nil {
			t.Fatal(err)
		}
		if err := repo.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
		st.Tasks[i].Status, st.Tasks[i].Attempts = taskgraph.Completed, 1
		st.Info[id].Commit, st.Info[id].Checkpoint, st.Info[id].Merge = c, c, i+1
		st.Checkpoints.Head, st.Checkpoints.Merges = c, i+1
	}
	saveCompleted(t, vol, ws, st, now)
	return vol, ws, repo, st
}

// kill -9 during `planagent rollback` (a subprocess: this test binary as
// planagent) at many moments — random ones, and right at the move's first
// file change — never leaves the user stuck: running the same command
// again brings the branch, the files and the run's state exactly to the
// rollback's target (clean status, fsck clean, the user's ignored file
// intact, the tasks pending and the run resumable). Half the kills take
// the git the rollback runs with them (a lock may then be left, which the
// command names: removed as its line says, as a user would), half only
// planagent (its git finishes on its own).
func TestRollbackKilledThenRunAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 16 kill -9s of a rollback of 750 files, about a minute (make test runs it)")
	}
	vol, ws, _, st := bigRun(t)
	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	runDir := l.Run(st.RunID)
	saved := map[string][]byte{}
	entries, err := os.ReadDir(runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(runDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			saved[e.Name()] = b
		}
	}
	start, end := st.Checkpoints.Start, st.Checkpoints.Head
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	mustGit := func(args ...string) string {
		t.Helper()
		out, err := git(args...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return out
	}
	// restore puts the run back as it was before the rollback: the branch
	// and the files at the last checkpoint (by git), the run's files.
	restore := func() {
		t.Helper()
		mustGit("read-tree", "-m", "-u", start, end)
		mustGit("update-ref", "refs/heads/main", end, start)
		for _, e := range mustReadDir(t, runDir) {
			if _, ok := saved[e]; !ok {
				_ = os.Remove(filepath.Join(runDir, e))
			}
		}
		for name, b := range saved {
			if err := os.WriteFile(filepath.Join(runDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := []string{"rollback", st.RunID, "--start", "--volumes", vol, "--workspace", ws}
	spawn := func() *exec.Cmd {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), planagentHelperEnv+"="+strings.Join(args, "\n"))
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	check := func(i int, how string) {
		t.Helper()
		if h := mustGit("rev-parse", "refs/heads/main"); h != start {
			t.Fatalf("kill %d (%s): main at %s, want the start %s", i, how, h, start)
		}
		if ref := mustGit("symbolic-ref", "HEAD"); ref != "refs/heads/main" {
			t.Fatalf("kill %d (%s): HEAD is %s", i, how, ref)
		}
		if s := mustGit("status", "--porcelain", "--untracked-files=all"); s != "" {
			t.Fatalf("kill %d (%s): status after the rollback: %q", i, how, s)
		}
		if out, err := git("fsck", "--no-progress", "--no-dangling"); err != nil || out != "" {
			t.Fatalf("kill %d (%s): fsck: %v %q", i, how, err, out)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "secret.env")); err != nil || string(b) != "KEY=the user's, ignored\n" {
			t.Fatalf("kill %d (%s): the user's ignored file: %q %v", i, how, b, err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "one\ntwo\n" {
			t.Fatalf("kill %d (%s): notes.txt %q, want the start's", i, how, b)
		}
		got, err := runrecord.LoadState(l, st.RunID, false)
		if err != nil {
			t.Fatal(err)
		}
		cp := got.Checkpoints
		if cp.Head != start || cp.Rollback != nil || cp.Merges != 0 || got.Status.Finished() {
			t.Fatalf("kill %d (%s): state head %s (want %s), journal %+v, merges %d, status %s", i, how, cp.Head, start, cp.Rollback, cp.Merges, got.Status)
		}
		for _, task := range got.Tasks {
			if task.Status != taskgraph.Pending || got.Info[task.ID].Checkpoint != "" {
				t.Fatalf("kill %d (%s): task %s %s, checkpoint %q", i, how, task.ID, task.Status, got.Info[task.ID].Checkpoint)
			}
		}
	}

	// One rollback not killed: how long a move takes here.
	began := time.Now()
	if err := spawn().Wait(); err != nil {
		t.Fatalf("an uninterrupted rollback: %v", err)
	}
	whole := time.Since(began)
	check(0, "not killed")
	t.Logf("an uninterrupted rollback took %s", whole)

	lockRe := regexp.MustCompile(`git's lock (\S+) is there`)
	firstChange := filepath.Join(ws, "gen", "d00", "f0000.txt") // the first path git's move removes
	var midMove, stuckLocks, redoneByRerun int
	const kills = 16
	for i := 1; i <= kills; i++ {
		restore()
		groupKill := i%2 == 1
		how := "random"
		c := spawn()
		if i%3 == 0 {
			// Right at the first file change: watched for, then killed.
			how = "at the first file change"
			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Lstat(firstChange); errors.Is(err, os.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the rollback never removed gen/d00/f0000.txt")
				}
			}
		} else {
			time.Sleep(time.Duration(rand.Int64N(int64(whole) * 3 / 2)))
		}
		target := c.Process.Pid
		if groupKill {
			target = -target
			how += ", with its git"
		}
		_ = syscall.Kill(target, syscall.SIGKILL)
		_ = c.Wait()
		if !groupKill {
			// Its git goes on alone: the user's next command comes once
			// it is done (as git's own lock would make it wait).
			waitGroupGone(t, c.Process.Pid)
		}
		if h, _ := git("rev-parse", "refs/heads/main"); h != start {
			if _, err := os.Lstat(firstChange); errors.Is(err, os.ErrNotExist) {
				midMove++ // files changed, the branch not yet moved
			}
		}
		var code int
		var out, errOut string
		for tries := 0; ; tries++ {
			code, out, errOut = runPlanagent(t, vol, ws, args[:3]...)
			m := lockRe.FindStringSubmatch(errOut)
			if code == cmdutil.ExitUsage && m != nil && tries == 0 {
				stuckLocks++
				if err := os.Remove(m[1]); err != nil {
					t.Fatal(err)
				}
				continue
			}
			break
		}
		if code != 0 {
			t.Fatalf("kill %d (%s): the same rollback again: exit %d\n%s%s", i, how, code, out, errOut)
		}
		if strings.Contains(errOut, "finishing the rollback that was interrupted") {
			redoneByRerun++
		}
		if !strings.Contains(out, "rolled back to where the run began") {
			t.Fatalf("kill %d (%s): the rerun said %q", i, how, out)
		}
		check(i, how)
	}
	t.Logf("%d kills: %d with the files changed and the branch not moved yet, %d finished from the journal, %d left a git lock the command named", kills, midMove, redoneByRerun, stuckLocks)
	if redoneByRerun == 0 {
		t.Error("no kill fell inside a journaled rollback: the test did not test it")
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// waitGroupGone waits until no process of the process group pgid is
// left (the git a killed planagent started), up to a minute.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for syscall.Kill(-pgid, 0) == nil {
		select {
		case <-ctx.Done():
			t.Fatalf("process group %d still there after a minute", pgid)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A rollback cut short after its journal was saved and git had moved the
// files but not the branch (where a kill -9 leaves it) is finished by
// `planagent resume` too: it says so, and the branch, the files and the
// run's state end at the rollback's target before the run goes on.
func TestResumeFinishesAnInterruptedRollback(t *testing.T) {
	t.Parallel()
	vol, ws, repo, st := checkpointedRun(t, true)
	ctx := t.Context()
	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	cp := st.Checkpoints
	start, end := cp.Start, cp.Head
	// What `planagent rollback --start` saves before its first change.
	cp.Rollback = &runrecord.Rollback{From: end, To: start, Reset: resetAfter(st, 0)}
	st.Status = runrecord.RunInterrupted
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
	// git's move of the files done, the branch not moved: killed between.
	if out, err := exec.Command("git", "-C", ws, "read-tree", "-m", "-u", end, start).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the half-done move left a.txt")
	}
	if code, _, errOut := runPlanagent(t, vol, ws, "rollback", st.RunID, "--to", "a"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "task a is pending") {
		t.Fatalf("another rollback: exit %d\n%s", code, errOut)
	}
	if h, _ := repo.Head(ctx); h != start {
		t.Fatalf("after another rollback: HEAD %s, want %s (the interrupted one finished first)", h, start)
	}

	// Put the same interruption back, for resume.
	mustGit := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	mustGit("read-tree", "-m", "-u", start, end)
	mustGit("update-ref", "refs/heads/main", end, start)
	mustGit("read-tree", "-m", "-u", end, start)
	got, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	got.Checkpoints.Head, got.Checkpoints.Merges = end, 2
	got.Checkpoints.Rollback = &runrecord.Rollback{From: end, To: start, Reset: []string{"a", "b"}}
	if err := got.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}

	srv := llmtest.New(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codingagent"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, _, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_RUNTIME": "local", "CODEAGENT_REPO_MAP_TOKENS": "0"})
	f.Executable = filepath.Join(bin, "planagent")
	code := cmdutil.Main(f, NewCmdRoot(f), []string{"resume", st.RunID, "--volumes", vol, "--workspace", ws})
	if !strings.Contains(errb.String(), "finishing the rollback that was interrupted ("+end[:12]+" to "+start[:12]+")") {
		t.Fatalf("resume (exit %d) did not finish the rollback:\n%s", code, errb)
	}
	back, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.Checkpoints.Rollback != nil || back.Checkpoints.Merges != 0 {
		t.Errorf("after resume: journal %+v, merges %d", back.Checkpoints.Rollback, back.Checkpoints.Merges)
	}
	// The resumed tasks' agent (a codingagent that exits 1) merges
	// nothing: the branch and the run stay at the rollback's target.
	if h := gitOut(t, repo.GitDir(), "rev-parse", "refs/heads/main"); h != start || back.Checkpoints.Head != start {
		t.Errorf("after resume (exit %d): main at %s, the run's head %s, want both at %s", code, h, back.Checkpoints.Head, start)
	}
	if s := gitOut(t, repo.GitDir(), "--work-tree", ws, "status", "--porcelain"); s != "" {
		t.Errorf("status after resume: %q", s)
	}
}

// A rollback while the user is on another branch is refused before
// anything is saved or moved: the branch they left and the one they are
// on stay where they are.
func TestRollbackOnAnotherBranchIsRefused(t *testing.T) {
	t.Parallel()
	vol, ws, repo, st := checkpointedRun(t, true)
	if out, err := exec.Command("git", "-C", ws, "switch", "-q", "-c", "other").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	code, _, errOut := runPlanagent(t, vol, ws, "rollback", st.RunID, "--start")
	want := "run " + st.RunID + " commits to branch main, but the workspace is now on branch other: switch back (`git switch main`)"
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, want) {
		t.Fatalf("rollback on another branch: exit %d\n%s\nwant %q", code, errOut, want)
	}
	for _, b := range []string{"main", "other"} {
		if h := gitOut(t, repo.GitDir(), "rev-parse", b); h != st.Checkpoints.Head {
			t.Errorf("%s moved to %s", b, h)
		}
	}
	l, _ := volume.New(vol, ws)
	back, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.Checkpoints.Rollback != nil || back.Status != runrecord.RunCompleted {
		t.Errorf("the refused rollback changed the run: journal %+v, status %s", back.Checkpoints.Rollback, back.Status)
	}
}
