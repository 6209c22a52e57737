package orchestrator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// logSink keeps the text of the log events.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) Emit(e events.Event) {
	if e.Type == events.Log {
		s.mu.Lock()
		s.lines = append(s.lines, e.Text)
		s.mu.Unlock()
	}
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// userGitRun is a run of the tasks a and b (b after a) on the branch main
// of a real git workspace. Each agent writes <id>.txt and changes the
// third line of notes.txt in its attempt's copy; while task a runs, the
// user does what during (in the workspace, with git). The user also has
// an untracked file and an uncommitted change of their own all along.
type userGitRun struct {
	t     *testing.T
	l     volume.Layout
	ws    string
	repo  *checkpoint.Repo
	st    *runrecord.State
	rt    *fakeRuntime
	sink  *logSink
	start string
}

func newUserGitRun(t *testing.T, during func(u *userGitRun)) *userGitRun {
	t.Helper()
	ctx := t.Context()
	u := &userGitRun{t: t, l: newLayout(t), sink: &logSink{}}
	u.ws = u.l.Workspace()
	u.write("notes.txt", "one\ntwo\nthree\nfour\n")
	u.write("README", "project\n")
	u.git("init", "-q", "-b", "main")
	u.git("add", "-A")
	u.git("commit", "-q", "-m", "start")
	var err error
	if u.repo, err = checkpoint.Open(ctx, u.ws, checkpoint.ShadowDir(filepath.Join(u.l.Root, "checkpoints"), u.ws), []string{u.l.Root}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.repo.Close() })
	if u.start, err = u.repo.Head(ctx); err != nil {
		t.Fatal(err)
	}
	u.st = newTestState(t, plan.Task{ID: "a", Title: "Task a", Description: "write a"},
		plan.Task{ID: "b", Title: "Task b", Description: "write b", Dependencies: []string{"a"}})
	u.st.Checkpoints = &runrecord.Checkpoints{Mode: u.repo.Mode(), GitDir: u.repo.GitDir(), Branch: u.repo.Branch(), Start: u.start, Head: u.start}
	// The user's own uncommitted work, there before the run and after it.
	u.write("scratch.txt", "the user's untracked notes\n")
	u.rt = newFakeRuntime(u.l, func(c *protocol.Command) *protocol.Report {
		dir := u.l.Attempt(c.RunID, c.ID, c.Attempt)
		if c.ID == "a" && c.Attempt == 1 && during != nil {
			during(u)
		}
		notes, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
		lines := strings.Split(string(notes), "\n")
		if len(lines) > 2 {
			lines[2] += " (" + c.ID + ")"
		}
		_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Join(lines, "\n")), 0o644)
		_ = os.WriteFile(filepath.Join(dir, c.ID+".txt"), []byte(c.ID+"\n"), 0o644)
		return completed(c)
	})
	return u
}

func (u *userGitRun) write(name, content string) {
	u.t.Helper()
	if err := os.WriteFile(filepath.Join(u.ws, name), []byte(content), 0o644); err != nil {
		u.t.Fatal(err)
	}
}

func (u *userGitRun) read(name string) string {
	u.t.Helper()
	b, err := os.ReadFile(filepath.Join(u.ws, name))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (u *userGitRun) git(args ...string) string {
	u.t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=User", "-c", "user.email=user@example.com", "-C", u.ws}, args...)...)
	out, err := c.CombinedOutput()
	if err != nil {
		u.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (u *userGitRun) drive() error {
	return New(Options{Layout: u.l, Runtime: u.rt, Repo: u.repo, Events: u.sink}).Drive(u.t.Context(), u.st)
}

// userIntact checks the user's untracked file.
func (u *userGitRun) userIntact() {
	u.t.Helper()
	if got := u.read("scratch.txt"); got != "the user's untracked notes\n" {
		u.t.Errorf("the user's untracked file: %q", got)
	}
}

// A commit of the user's on the run's branch while a task runs: the run
// says so in one line and merges the task on top of it (git's three-way
// merge), and the next task starts from there. Both the user's commit and
// the tasks' work are on the branch; the user's untracked file stays.
func TestUserCommitDuringATaskIsKept(t *testing.T) {
	t.Parallel()
	var userCommit string
	u := newUserGitRun(t, func(u *userGitRun) {
		u.write("README", "project, edited by the user\n")
		u.git("commit", "-q", "-am", "the user's commit")
		userCommit = u.git("rev-parse", "HEAD")
	})
	if err := u.drive(); err != nil {
		t.Fatal(err)
	}
	if u.st.Status != runrecord.RunCompleted {
		t.Fatalf("run %s: %+v", u.st.Status, u.st.Stop)
	}
	if !strings.Contains(u.sink.text(), "task a: branch main has commits that are not the run's (now at "+userCommit[:12]+"): merging the task on top of them") {
		t.Errorf("no line about the user's commit:\n%s", u.sink.text())
	}
	log := u.git("log", "--format=%s", "main")
	if log != "b: Task b\na: Task a\nthe user's commit\nstart" {
		t.Errorf("main's history:\n%s", log)
	}
	if u.read("README") != "project, edited by the user\n" || u.read("a.txt") != "a\n" || u.read("b.txt") != "b\n" ||
		u.read("notes.txt") != "one\ntwo\nthree (a) (b)\nfour\n" {
		t.Errorf("workspace: README %q, a %q, b %q, notes %q", u.read("README"), u.read("a.txt"), u.read("b.txt"), u.read("notes.txt"))
	}
	if s := u.git("status", "--porcelain"); s != "?? scratch.txt" {
		t.Errorf("status: %q", s)
	}
	u.userIntact()
	if u.st.Checkpoints.Head != u.git("rev-parse", "HEAD") {
		t.Errorf("the run's head %s is not the branch's", u.st.Checkpoints.Head)
	}
}

// A commit of the user's that the task's change does not apply onto: the
// run stops, resumably, naming the file; nothing is merged, the user's
// commit and files stay, the task's work is kept (its merge saved). Once
// the user reverts their commit, the resumed run merges the task on top.
func TestUserCommitThatConflictsStopsTheRun(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "checkpoint.TestConflict and TestUserUncommittedChangeStopsTheMerge (a refused merge stops the run, resumably)")
	u := newUserGitRun(t, func(u *userGitRun) {
		u.write("notes.txt", "one\ntwo\nTHREE by the user\nfour\n")
		u.git("commit", "-q", "-am", "the user's commit")
	})
	err := u.drive()
	var ug *userGitError
	if !errors.As(err, &ug) || !strings.Contains(err.Error(), "task a conflicts with your commits on branch main") ||
		!strings.Contains(err.Error(), "in notes.txt") || !strings.Contains(err.Error(), "planagent resume "+u.st.RunID) {
		t.Fatalf("drive: %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("more than one line: %q", err)
	}
	if u.st.Status != runrecord.RunInterrupted || u.st.Info["a"].Merging == "" {
		t.Fatalf("state: %s, merging %q: not resumable with the task's work", u.st.Status, u.st.Info["a"].Merging)
	}
	if log := u.git("log", "--format=%s", "main"); log != "the user's commit\nstart" {
		t.Errorf("main's history after the stop:\n%s", log)
	}
	if u.read("notes.txt") != "one\ntwo\nTHREE by the user\nfour\n" {
		t.Errorf("the user's notes.txt: %q", u.read("notes.txt"))
	}
	if s := u.git("status", "--porcelain"); s != "?? scratch.txt" {
		t.Errorf("status after the stop: %q", s)
	}
	u.userIntact()

	u.git("revert", "--no-edit", "HEAD")
	if err := u.drive(); err != nil {
		t.Fatalf("resumed: %v", err)
	}
	if u.st.Status != runrecord.RunCompleted {
		t.Fatalf("resumed run %s", u.st.Status)
	}
	if log := u.git("log", "--format=%s", "main"); !strings.HasPrefix(log, "b: Task b\na: Task a\nRevert") {
		t.Errorf("main's history after resume:\n%s", log)
	}
	if u.read("notes.txt") != "one\ntwo\nthree (a) (b)\nfour\n" || u.read("a.txt") != "a\n" {
		t.Errorf("after resume: notes %q, a %q", u.read("notes.txt"), u.read("a.txt"))
	}
	u.userIntact()
}

// A branch switch (or a detached HEAD) in the user's checkout while a task
// runs: the run stops before its merge, naming what to do; the branch the
// user left does not move, and nothing of the task's is written or staged
// in the checkout. Switched back, the resumed run merges it.
func TestUserSwitchDuringATaskStopsTheRun(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "checkpoint.TestAdvanceRefusesASwitchedCheckout and TestUserUncommittedChangeStopsTheMerge")
	for _, tc := range []struct {
		name, now string
		switchTo  []string
	}{
		{"new branch", "branch other", []string{"switch", "-q", "-c", "other"}},
		{"detached HEAD", "a detached HEAD", []string{"switch", "-q", "--detach"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUserGitRun(t, func(u *userGitRun) { u.git(tc.switchTo...) })
			err := u.drive()
			var ug *userGitError
			want := "task a is done but not merged: the workspace is on " + tc.now + ", not on branch main that the run commits to"
			if !errors.As(err, &ug) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "`git switch main`, then `planagent resume "+u.st.RunID+"`") {
				t.Fatalf("drive: %v\nwant %q", err, want)
			}
			if h := u.git("rev-parse", "main"); h != u.start {
				t.Errorf("main moved to %s while the user was elsewhere", h)
			}
			if s := u.git("status", "--porcelain"); s != "?? scratch.txt" {
				t.Errorf("the user's checkout after the stop: %q (the task's files staged or written?)", s)
			}
			if _, err := os.Stat(filepath.Join(u.ws, "a.txt")); !os.IsNotExist(err) {
				t.Error("the task's file was written into the checkout the user switched to")
			}
			if u.st.Status != runrecord.RunInterrupted || u.st.Info["a"].Merging == "" {
				t.Fatalf("state: %s, merging %q", u.st.Status, u.st.Info["a"].Merging)
			}
			// Resumed while still switched away: the same stop, nothing moved.
			if err := u.drive(); !errors.As(err, &ug) {
				t.Fatalf("resumed while switched away: %v", err)
			}
			if h := u.git("rev-parse", "main"); h != u.start {
				t.Errorf("main moved to %s on a resume while the user was elsewhere", h)
			}

			u.git("switch", "-q", "main")
			if err := u.drive(); err != nil {
				t.Fatalf("resumed on main: %v", err)
			}
			if u.st.Status != runrecord.RunCompleted {
				t.Fatalf("resumed run %s", u.st.Status)
			}
			if log := u.git("log", "--format=%s", "main"); log != "b: Task b\na: Task a\nstart" {
				t.Errorf("main's history:\n%s", log)
			}
			if u.read("a.txt") != "a\n" || u.read("b.txt") != "b\n" {
				t.Errorf("workspace after resume: a %q, b %q", u.read("a.txt"), u.read("b.txt"))
			}
			for id, want := range map[string]taskgraph.Status{"a": taskgraph.Completed, "b": taskgraph.Completed} {
				if got := status(u.st)[id]; got != want {
					t.Errorf("task %s %s", id, got)
				}
			}
			u.userIntact()
		})
	}
}

// An uncommitted change of the user's in a file the task changed: git
// refuses to write over it and the run stops, naming the file, with the
// change and the task's work kept; stashed, the resumed run merges it.
func TestUserUncommittedChangeStopsTheMerge(t *testing.T) {
	t.Parallel()
	u := newUserGitRun(t, func(u *userGitRun) { u.write("notes.txt", "one\ntwo\nthree, being edited\nfour\n") })
	err := u.drive()
	var ug *userGitError
	if !errors.As(err, &ug) || !strings.Contains(err.Error(), "your uncommitted changes to notes.txt") {
		t.Fatalf("drive: %v", err)
	}
	if u.read("notes.txt") != "one\ntwo\nthree, being edited\nfour\n" {
		t.Errorf("the user's edit: %q", u.read("notes.txt"))
	}
	if h := u.git("rev-parse", "main"); h != u.start {
		t.Errorf("main moved to %s", h)
	}
	u.git("stash", "-q")
	if err := u.drive(); err != nil {
		t.Fatalf("resumed: %v", err)
	}
	if u.st.Status != runrecord.RunCompleted || u.read("notes.txt") != "one\ntwo\nthree (a) (b)\nfour\n" {
		t.Errorf("resumed run %s, notes %q", u.st.Status, u.read("notes.txt"))
	}
	u.userIntact()
}
