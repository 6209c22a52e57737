package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

func gitOut(t *testing.T, gitDir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", gitDir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkpointedRun makes a real run state whose two tasks a and b completed
// as two checkpoints made through the checkpoint package, in a git
// workspace or (git false) a plain directory with a shadow repository.
func checkpointedRun(t *testing.T, useGit bool) (vol, ws string, repo *checkpoint.Repo, st *runrecord.State) {
	t.Helper()
	ctx := t.Context()
	vol, ws = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "mine ü.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if useGit {
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
			{"-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "start"}} {
			if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(vol, "checkpoints"), ws), []string{vol})
	if err != nil {
		t.Fatal(err)
	}
	start, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Title: "two", Overview: "two files", Tasks: []plan.Task{
		{ID: "a", Title: "Step a", Description: "write a.txt"},
		{ID: "b", Title: "Step b", Description: "write b.txt"},
	}}
	now := time.Now()
	st, err = runrecord.NewState(runrecord.NewRunID(now), "two files", p, llm.Usage{}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Settings = &runrecord.Settings{Workspace: ws}
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: start, Head: start}
	for i, id := range []string{"a", "b"} {
		base := st.Checkpoints.Head
		dir := filepath.Join(t.TempDir(), id)
		if err := repo.NewCopy(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".txt"), []byte(id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c, _, err := repo.Squash(ctx, dir, base, id+": Step "+id, "did "+id)
		if err != nil {
			t.Fatal(err)
		}
		if c, err = repo.Apply(ctx, dir, base, c, base); err != nil {
			t.Fatal(err)
		}
		if err := repo.Advance(ctx, base, c); err != nil {
			t.Fatal(err)
		}
		if err := repo.RemoveCopy(dir); err != nil {
			t.Fatal(err)
		}
		st.Tasks[i].Status = taskgraph.Completed
		st.Tasks[i].Attempts = 1
		st.Info[id].Commit, st.Info[id].Checkpoint, st.Info[id].Merge = c, c, i+1
		st.Checkpoints.Head, st.Checkpoints.Merges = c, i+1
	}
	saveCompleted(t, vol, ws, st, now)
	return vol, ws, repo, st
}

func runPlanagent(t *testing.T, vol, ws string, args ...string) (code int, out, errOut string) {
	t.Helper()
	f, o, e := testFactory(nil)
	code = cmdutil.Main(f, NewCmdRoot(f), append(args, "--volumes", vol, "--workspace", ws))
	return code, o.String(), e.String()
}

// diff and rollback on real state files and real git, in both modes: the
// user's edit refuses the rollback (exit 2, the file named, nothing
// moved); then --start takes both checkpoints off, keeps them reachable,
// leaves the user's own file, and makes both tasks pending and the run
// resumable.
func TestDiffAndRollbackStart(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"git", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			vol, ws, repo, st := checkpointedRun(t, mode == "git")
			if repo.Mode() != mode {
				t.Fatalf("mode %s, want %s", repo.Mode(), mode)
			}
			code, out, errOut := runPlanagent(t, vol, ws, "diff", st.RunID, "b")
			if code != 0 || !strings.Contains(out, "+++ b/b.txt") || strings.Contains(out, "a.txt") {
				t.Fatalf("diff b: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, _ = runPlanagent(t, vol, ws, "diff"); code != 0 || !strings.Contains(out, "a.txt") || !strings.Contains(out, "b.txt") {
				t.Fatalf("the run's diff: exit %d\n%s", code, out)
			}

			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("the user's edit\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut = runPlanagent(t, vol, ws, "rollback", "--start")
			if code != cmdutil.ExitUsage || !strings.Contains(errOut, "a.txt") {
				t.Fatalf("rollback over an edit: exit %d\n%s", code, errOut)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "the user's edit\n" {
				t.Fatalf("the user's edit became %q", b)
			}
			if h, _ := repo.Head(t.Context()); h != st.Checkpoints.Head {
				t.Fatal("a refused rollback moved HEAD")
			}

			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut = runPlanagent(t, vol, ws, "rollback", st.RunID, "--start")
			if code != 0 || !strings.Contains(out, "pending again: a, b") {
				t.Fatalf("rollback --start: exit %d\n%s%s", code, out, errOut)
			}
			for _, gone := range []string{"a.txt", "b.txt"} {
				if _, err := os.Stat(filepath.Join(ws, gone)); !os.IsNotExist(err) {
					t.Errorf("%s still there after the rollback", gone)
				}
			}
			if b, err := os.ReadFile(filepath.Join(ws, "mine ü.txt")); err != nil || string(b) != "the user's\n" {
				t.Errorf("the user's file: %q %v", b, err)
			}
			if mode == "shadow" {
				if _, err := os.Stat(filepath.Join(ws, ".git")); !os.IsNotExist(err) {
					t.Error("the shadow mode put a .git in the workspace")
				}
			}
			if h, _ := repo.Head(t.Context()); h != st.Checkpoints.Start {
				t.Errorf("HEAD %s, want the start %s", h, st.Checkpoints.Start)
			}
			if gitOut(t, repo.GitDir(), "cat-file", "-t", st.Info["b"].Commit) != "commit" ||
				!strings.Contains(gitOut(t, repo.GitDir(), "for-each-ref", "--format=%(objectname)", "refs/codeagent/"), st.Info["b"].Commit) {
				t.Error("the rolled-back checkpoint is not kept under refs/codeagent/")
			}

			l, _ := volume.New(vol, ws)
			got, err := runrecord.LoadState(l, st.RunID, false)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Finished() || got.Checkpoints.Head != got.Checkpoints.Start || got.Checkpoints.Merges != 0 {
				t.Errorf("state after rollback: status %s, head %s (start %s), merges %d", got.Status, got.Checkpoints.Head, got.Checkpoints.Start, got.Checkpoints.Merges)
			}
			for _, task := range got.Tasks {
				if task.Status != taskgraph.Pending || got.Info[task.ID].Commit != "" {
					t.Errorf("task %s after rollback: %s, commit %q", task.ID, task.Status, got.Info[task.ID].Commit)
				}
			}
		})
	}
}

// On a terminal the patch is coloured and goes through $PAGER; piped it is
// the plain patch; a run that changed nothing says so.
func TestDiffOnATerminalAndOfNothing(t *testing.T) {
	t.Parallel()
	vol, ws, _, st := checkpointedRun(t, true)
	paged := filepath.Join(t.TempDir(), "paged")
	f, out, errb := testFactory(map[string]string{"PAGER": "cat > '" + paged + "'"})
	f.IO.OutIsTerminal = func() bool { return true }
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"diff", st.RunID, "b", "--volumes", vol, "--workspace", ws}); code != 0 {
		t.Fatalf("diff on a terminal: exit %d\n%s", code, errb)
	}
	b, err := os.ReadFile(paged)
	if err != nil {
		t.Fatalf("the pager got nothing: %v (stdout %q)", err, out)
	}
	for _, want := range []string{ansiBold + "diff --git a/b.txt b/b.txt" + ansiReset + "\n", ansiCyan + "@@ -0,0 +1 @@" + ansiReset + "\n", ansiGreen + "+b" + ansiReset + "\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the paged patch lacks %q:\n%q", want, b)
		}
	}
	if code, plain, _ := runPlanagent(t, vol, ws, "diff", st.RunID, "b"); code != 0 || strings.Contains(plain, "\x1b[") || !strings.Contains(plain, "\n+b\n") {
		t.Errorf("piped diff: exit %d, want the plain patch:\n%q", code, plain)
	}

	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	st.Checkpoints.Head = st.Checkpoints.Start
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, plain, errOut := runPlanagent(t, vol, ws, "diff", st.RunID)
	if code != 0 || plain != "" || !strings.Contains(errOut, "no changes in run "+st.RunID) {
		t.Errorf("diff of a run that changed nothing: exit %d, stdout %q, stderr %q", code, plain, errOut)
	}
}

// Shell completion offers the runs under the volumes and their tasks.
func TestCompletionOffersRunsAndTasks(t *testing.T) {
	t.Parallel()
	vol, ws, _, st := checkpointedRun(t, false)
	complete := func(args ...string) []string {
		t.Helper()
		// The word being completed comes last, after the volumes' flags.
		f, o, e := testFactory(nil)
		line := append([]string{"__complete", args[0], "--volumes", vol, "--workspace", ws}, args[1:]...)
		code, out, errOut := cmdutil.Main(f, NewCmdRoot(f), line), o.String(), e.String()
		if code != 0 {
			t.Fatalf("__complete %v: exit %d\n%s", args, code, errOut)
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(line, ":") { // the directive line
				names = append(names, strings.SplitN(line, "\t", 2)[0])
			}
		}
		return names
	}
	same := func(got []string, want ...string) bool { return strings.Join(got, " ") == strings.Join(want, " ") }
	if got := complete("status", ""); !same(got, st.RunID) {
		t.Errorf("status RUN: %v, want %s", got, st.RunID)
	}
	if got := complete("diff", ""); !same(got, st.RunID, "a", "b") {
		t.Errorf("diff [RUN|TASK]: %v, want the run and the latest run's tasks", got)
	}
	if got := complete("diff", st.RunID, ""); !same(got, "a", "b") {
		t.Errorf("diff RUN TASK: %v, want a b", got)
	}
	if got := complete("rollback", "--to", ""); !same(got, "a", "b") {
		t.Errorf("rollback --to: %v, want a b", got)
	}
	if got := complete("comment", st.RunID, ""); !same(got, "a", "b") {
		t.Errorf("comment RUN TASK: %v, want a b", got)
	}
}

// saveCompleted saves st as a completed run in the volumes dir vol of
// workspace ws, as a finished planagent run leaves it.
func saveCompleted(t *testing.T, vol, ws string, st *runrecord.State, now time.Time) {
	t.Helper()
	st.Status = runrecord.RunCompleted
	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(l, now); err != nil {
		t.Fatal(err)
	}
}
