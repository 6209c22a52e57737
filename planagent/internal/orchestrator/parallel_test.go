package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// copyCounter is an agent that writes one file of its own in its attempt's
// copy and completes, and counts the attempt copies of the run on disk
// each time it is handed a command: the work in flight, merge queue included.
type copyCounter struct {
	dir  string // attempts/<run>
	mu   sync.Mutex
	most int
}

func (c *copyCounter) answer(l volume.Layout) func(*protocol.Command) *protocol.Report {
	return func(cmd *protocol.Command) *protocol.Report {
		dir := l.Attempt(cmd.RunID, cmd.ID, cmd.Attempt)
		_ = os.WriteFile(filepath.Join(dir, cmd.ID+".txt"), []byte(cmd.ID+"\n"), 0o644)
		entries, _ := os.ReadDir(c.dir)
		n := 0
		for _, e := range entries {
			if e.IsDir() && !strings.HasSuffix(e.Name(), ".accept") {
				n++
			}
		}
		c.mu.Lock()
		c.most = max(c.most, n)
		c.mu.Unlock()
		return completed(cmd)
	}
}

// isolatedSetup is a workspace of one file under a shadow checkpoint
// repository, snapshotted, and a state of tasks whose checkpoints start
// there; the runtime's agents each write a file of their own.
func isolatedSetup(t testing.TB, pool int, tasks ...plan.Task) (volume.Layout, *checkpoint.Repo, *runrecord.State, *copyCounter, *fakeRuntime) {
	ctx := t.Context()
	l := newLayout(t)
	ws := l.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(l.Root, "checkpoints"), ws), []string{l.Root})
	if err != nil {
		t.Fatal(err)
	}
	if pool > 0 {
		repo.SetPool(filepath.Join(l.Attempts(), ".pool"), pool)
	}
	if err := repo.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := newTestState(t, tasks...)
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}
	counter := &copyCounter{dir: filepath.Join(l.Attempts(), st.RunID)}
	return l, repo, st, counter, newFakeRuntime(l, counter.answer(l))
}

// isolatedDrive runs tasks with checkpoints (a shadow repository, a copy per
// attempt, the merge queue) and file-writing agents; it returns the most
// attempt copies seen on disk at once and how long Drive took.
func isolatedDrive(t testing.TB, tasks []plan.Task, parallel int) (*runrecord.State, int, time.Duration) {
	ctx := t.Context()
	l, repo, st, counter, rt := isolatedSetup(t, parallel+1, tasks...)
	start := time.Now()
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: parallel}).Drive(ctx, st); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("run %s", st.Status)
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	return st, counter.most, took
}

// --parallel bounds the work in flight, the tasks finished but waiting for
// their merge included: the attempt copies on disk never outnumber it. Each
// merge (a squash, an apply, a move of the workspace) takes far longer than
// an instant agent, so without the bound the queue and its copies grow.
func TestDriveParallelBoundsTheMergeQueue(t *testing.T) {
	t.Parallel()
	const parallel = 2
	st, most, _ := isolatedDrive(t, benchFanOut(6), parallel)
	if most > parallel {
		t.Errorf("%d attempt copies on disk at once at --parallel %d: the tasks waiting for their merge were not counted", most, parallel)
	}
	for _, id := range []string{"t00000", "t00005"} {
		if st.Info[id].Commit == "" {
			t.Errorf("%s was not merged: %+v", id, st.Info[id])
		}
	}
}

// BenchmarkIsolatedChain100 and BenchmarkIsolatedFanOut100 are the same 100
// file-writing tasks with checkpoints (a copy per attempt, the merge queue),
// one after the other and as a fan-out at --parallel 4. The fan-out must
// not be slower than the chain; max-copies is the most attempt copies on
// disk at once.
func BenchmarkIsolatedChain100(b *testing.B)  { benchIsolated(b, benchChain(100), 1) }
func BenchmarkIsolatedFanOut100(b *testing.B) { benchIsolated(b, benchFanOut(100), 4) }

func benchIsolated(b *testing.B, tasks []plan.Task, parallel int) {
	for b.Loop() {
		b.StopTimer() // the repository's setup is not the run's
		_, most, took := isolatedDrive(b, tasks, parallel)
		b.StartTimer()
		b.ReportMetric(took.Seconds(), "s/run")
		b.ReportMetric(float64(most), "max-copies")
	}
}

// gatedRepo is a real checkpoint repository whose copies for task gated
// are made only once the workspace moved for the merge of task after.
type gatedRepo struct {
	*checkpoint.Repo
	gated    string // the attempt copy's directory name, e.g. "c.1"
	advances int    // the moves to wait for
	mu       sync.Mutex
	moved    int
	gate     chan struct{}
}

func (r *gatedRepo) Advance(ctx context.Context, old, new string) error {
	err := r.Repo.Advance(ctx, old, new)
	r.mu.Lock()
	if r.moved++; r.moved == r.advances {
		close(r.gate)
	}
	r.mu.Unlock()
	return err
}

func (r *gatedRepo) NewCopy(ctx context.Context, dir, commit string) error {
	if filepath.Base(dir) == r.gated {
		select {
		case <-r.gate:
		case <-time.After(time.Minute):
			return errors.New("the loop did not merge while this copy was made: copies are made on the loop")
		}
	}
	return r.Repo.NewCopy(ctx, dir, commit)
}

// An attempt's copy is made off the loop: while it is being made, the loop
// merges the tasks that finished and moves the workspace. Here task c's
// copy is held until b's merge moved the workspace, which comes after c is
// dispatched (a's move frees the slot c takes, b's merge starts then): made
// on the loop, the copy would wait for a move the loop never gets to.
func TestDriveMakesCopiesOffTheLoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l, repo, st, _, rt := isolatedSetup(t, 0, plan.Task{ID: "a", Description: "a"}, plan.Task{ID: "b", Description: "b"}, plan.Task{ID: "c", Description: "c"})
	ws := l.Workspace()
	gated := &gatedRepo{Repo: repo, gated: "c.1", advances: 2, gate: make(chan struct{})}
	if err := New(Options{Layout: l, Runtime: rt, Repo: gated, Parallel: 2}).Drive(ctx, st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("run %s: %+v", st.Status, st.Stop)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Errorf("the workspace lacks %s: %v", f, err)
		}
	}
}

// movingRepo is a real checkpoint repository whose first move of the
// workspace fails, as when the user changed a file the task changed, and
// whose first merge waits until both tasks' squashes began: the second
// task is in the queue when the first merge is in.
type movingRepo struct {
	*checkpoint.Repo
	mu       sync.Mutex
	squashes int
	squashed chan struct{}
	moves    int
	applies  []string // "commit onto" of each Apply
}

func (r *movingRepo) Squash(ctx context.Context, dir, base, subject, body string) (string, []string, error) {
	r.mu.Lock()
	if r.squashes++; r.squashes == 2 {
		close(r.squashed)
	}
	r.mu.Unlock()
	return r.Repo.Squash(ctx, dir, base, subject, body)
}

func (r *movingRepo) Apply(ctx context.Context, dir, base, commit, onto string) (string, error) {
	r.mu.Lock()
	first := len(r.applies) == 0
	r.applies = append(r.applies, filepath.Base(dir)+" onto "+onto)
	r.mu.Unlock()
	if first {
		select {
		case <-r.squashed:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return r.Repo.Apply(ctx, dir, base, commit, onto)
}

func (r *movingRepo) Advance(ctx context.Context, old, new string) error {
	r.mu.Lock()
	r.moves++
	first := r.moves == 1
	r.mu.Unlock()
	if first {
		return errors.New("notes.txt was changed in the workspace since")
	}
	return r.Repo.Advance(ctx, old, new)
}

// The queue's next merge starts onto the merged result while the
// workspace moves there. When that move fails, the next merge went onto a
// state the workspace never reached: it is merged again onto the state it
// is at, and only that result reaches the workspace.
func TestDriveMergesAgainWhenTheMoveBeforeFailed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l, repo, st, _, rt := isolatedSetup(t, 0, plan.Task{ID: "a", Description: "a"}, plan.Task{ID: "b", Description: "b"})
	ws := l.Workspace()
	head := st.Checkpoints.Start
	moving := &movingRepo{Repo: repo, squashed: make(chan struct{})}
	if err := New(Options{Layout: l, Runtime: rt, Repo: moving, Parallel: 2}).Drive(ctx, st); err != nil {
		t.Fatal(err)
	}
	moving.mu.Lock()
	applies := moving.applies
	moving.mu.Unlock()
	var failed, done string
	for _, id := range []string{"a", "b"} {
		switch st.Info[id].Commit {
		case "":
			failed = id
		default:
			done = id
		}
	}
	if failed == "" || done == "" {
		t.Fatalf("want one task failed by its move and one completed; commits a %q, b %q", st.Info["a"].Commit, st.Info["b"].Commit)
	}
	if len(applies) != 3 {
		t.Fatalf("merges %v: want 3 (the first, the next onto its result, the next again onto the start)", applies)
	}
	if want := done + ".1 onto " + head; applies[2] != want {
		t.Errorf("the last merge was %q, want %q", applies[2], want)
	}
	if _, err := os.Stat(filepath.Join(ws, done+".txt")); err != nil {
		t.Errorf("the completed task's file is not in the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, failed+".txt")); !os.IsNotExist(err) {
		t.Errorf("the failed move's file reached the workspace: %v", err)
	}
	if got, err := repo.Head(ctx); err != nil || got != st.Checkpoints.Head || got != st.Info[done].Commit {
		t.Errorf("the branch is at %s (%v), the state says %s, %s's commit %s", got, err, st.Checkpoints.Head, done, st.Info[done].Commit)
	}
}
