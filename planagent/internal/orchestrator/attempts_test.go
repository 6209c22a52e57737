package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// A task of 3 attempts at --max-retries 0, with a decider that would give
// up at once: its acceptance fails twice, the third attempt passes and
// completes it. The decider is never asked; attempt 2 is told the first
// failure, attempt 3 deliberately not (next.EscalationHint).
func TestDriveEscalatesATaskOfSeveralAttempts(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var mu sync.Mutex
	hints := map[int][]string{}
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		mu.Lock()
		hints[c.Attempt] = c.Hints
		mu.Unlock()
		return completed(c)
	})
	rt.exec = func(command string) attempt.ExecResult {
		mu.Lock()
		defer mu.Unlock()
		if len(hints) < 3 {
			return attempt.ExecResult{ExitCode: 1, Output: "FAIL: parser_test.go:12: want 7, got 6"}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	st := newTestState(t, plan.Task{ID: "risky", Description: "hard", Acceptance: []string{"go test ./parser"}, Attempts: 3})
	d := &countingDecider{}
	o := New(Options{Layout: l, Runtime: rt, MaxRetries: 0, Decider: d})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["risky"]; got != taskgraph.Completed || st.Status != runrecord.RunCompleted {
		t.Fatalf("risky %s, run %s; want completed on the third attempt", got, st.Status)
	}
	if n := rt.count("risky"); n != 3 {
		t.Errorf("risky dispatched %d times, want 3", n)
	}
	if d.calls() != 0 {
		t.Errorf("the decider was asked %d times; a task's own attempts are not its to refuse", d.calls())
	}
	// Every attempt is on the record: how it ended, why, its rank, its tokens.
	res := st.Info["risky"].Results
	if len(res) != 3 {
		t.Fatalf("results %+v, want 3 attempts", res)
	}
	for i, want := range []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed", Tokens: protocol.Tokens{Prompt: 10, Completion: 2}},
		{Attempt: 2, Status: "failed", Hinted: true, Tokens: protocol.Tokens{Prompt: 10, Completion: 2}},
		{Attempt: 3, Status: "completed", Rank: 1, Tokens: protocol.Tokens{Prompt: 10, Completion: 2}},
	} {
		got := res[i]
		if got.Attempt != want.Attempt || got.Status != want.Status || got.Hinted != want.Hinted || got.Rank != want.Rank ||
			got.Tokens.Prompt != want.Tokens.Prompt || got.Tokens.Completion != want.Tokens.Completion || got.Duration <= 0 {
			t.Errorf("attempt %d: %+v, want %+v", i+1, got, want)
		}
		if (want.Status == "failed") != strings.Contains(got.Error, "want 7, got 6") {
			t.Errorf("attempt %d error %q", i+1, got.Error)
		}
	}
	told := func(n int) bool { return strings.Contains(strings.Join(hints[n], "\n"), "want 7, got 6") }
	if told(1) || !told(2) || told(3) {
		t.Errorf("told the failure: attempt 1 %v, 2 %v, 3 %v; want only 2 (hints %v)", told(1), told(2), told(3), hints)
	}
}

// The run's attempts setting is the default of the tasks that do not say;
// a task that passes first time costs one attempt (escalate).
func TestDriveAttemptsDefaultEscalatesOnlyOnFailure(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, completed)
	st := newTestState(t, plan.Task{ID: "easy", Description: "passes", Acceptance: []string{"true"}})
	o := New(Options{Layout: l, Runtime: rt, MaxRetries: 0, Attempts: 3})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["easy"]; got != taskgraph.Completed || rt.count("easy") != 1 {
		t.Errorf("easy %s after %d attempts; want completed after 1", got, rt.count("easy"))
	}
}

// countingDecider gives up on every failure, counting the calls.
type countingDecider struct {
	mu sync.Mutex
	n  int
}

func (d *countingDecider) Decide(_ context.Context, _ Failure) Verdict {
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
	return Verdict{Action: Continue, Reason: "give up"}
}

func (d *countingDecider) calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// newCheckpointedState is a run on a real checkpoint repository of the
// layout's workspace (one commit of the user's), its attempts in copies.
func newCheckpointedState(t *testing.T, l volume.Layout, tasks ...plan.Task) (*checkpoint.Repo, *runrecord.State) {
	t.Helper()
	ctx := t.Context()
	ws := l.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(l.Root, "checkpoints"), ws), []string{l.Root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	// A pool of thrown-away copies, as planagent's own (openCheckpoints)
	// keeps one per parallel task and one for acceptance: the copies are
	// made as a run makes them, most from a pooled copy, not by git.
	repo.SetPool(filepath.Join(l.Attempts(), ".pool"), 5)
	if err := repo.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := newTestState(t, tasks...)
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}
	return repo, st
}

// Every attempt that made a commit and was not merged keeps it under
// refs/codeagent/<run>/<task>/attempt-N, whole once the run has ended
// (its copies gone, the pending objects drained): the two whose
// acceptance failed are readable there with git; the merged one has no
// ref (it is on the branch), and the attempt that reported failure
// without a commit has none either.
func TestDriveKeepsTheUnmergedAttemptsAsRefs(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "TestSeveralParallelRunsAllAtOnceAndMergesTheSmallest (the unmerged attempts kept as refs)")
	l := newLayout(t)
	var mu sync.Mutex
	accepted := 0
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		dir := l.Attempt(c.RunID, c.ID, c.Attempt)
		if c.Attempt == 2 {
			rep := completed(c)
			rep.Status, rep.Error = protocol.StatusFailed, "gave up"
			return rep
		}
		name := fmt.Sprintf("attempt%d.txt", c.Attempt)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("by attempt %d\n", c.Attempt)), 0o644); err != nil {
			t.Error(err)
		}
		return completed(c)
	})
	// Attempts 1 and 3 fail their acceptance (2 never gets there, 4
	// passes): 2, 3 and 4 run side by side once 1 failed (escalate).
	rt.execDir = func(dir, _ string) attempt.ExecResult {
		mu.Lock()
		defer mu.Unlock()
		accepted++
		if _, err := os.Stat(filepath.Join(dir, "attempt4.txt")); err != nil {
			return attempt.ExecResult{ExitCode: 1, Output: "FAIL"}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "risky", Description: "hard", Acceptance: []string{"go test ./..."}, Attempts: 4})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["risky"]; got != taskgraph.Completed {
		t.Fatalf("risky %s, want completed by attempt 4", got)
	}
	ws := l.Workspace()
	// The workspace is no git repository: the run's is a shadow one, as a
	// user's git would read it (without planagent's pending objects).
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"--git-dir", repo.GitDir()}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for _, res := range st.Info["risky"].Results {
		want := ""
		if res.Attempt == 1 || res.Attempt == 3 {
			want = checkpoint.AttemptRef(st.RunID, "risky", res.Attempt)
		}
		if res.Ref != want {
			t.Errorf("attempt %d (%s): ref %q, want %q", res.Attempt, res.Status, res.Ref, want)
		}
		// Each attempt's own acceptance result is on its record.
		wantAcc := map[int]string{1: "FAIL\n(exit 1)", 2: "", 3: "FAIL\n(exit 1)", 4: "ok\n(exit 0)"}[res.Attempt]
		if (wantAcc == "") != (res.Acceptance == "") || !strings.Contains(res.Acceptance, wantAcc) {
			t.Errorf("attempt %d: acceptance %q, want %q", res.Attempt, res.Acceptance, wantAcc)
		}
		if want == "" {
			continue
		}
		got, err := git("show", want+":"+fmt.Sprintf("attempt%d.txt", res.Attempt))
		if err != nil || got != fmt.Sprintf("by attempt %d", res.Attempt) {
			t.Errorf("git show %s: %q, %v", want, got, err)
		}
	}
	if out, err := git("for-each-ref", "--format=%(refname)", "refs/codeagent/"+st.RunID+"/"); err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("the run's attempt refs:\n%s (%v); want attempts 1 and 3", out, err)
	}
	if out, err := git("fsck", "--no-dangling"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "attempt4.txt")); err != nil || string(got) != "by attempt 4\n" {
		t.Errorf("the merged attempt's file: %q, %v", got, err)
	}
}
