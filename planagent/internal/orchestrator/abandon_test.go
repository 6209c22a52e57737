package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// recordingRepo is a real checkpoint repository that records how the
// attempts' copies are thrown away.
type recordingRepo struct {
	*checkpoint.Repo
	mu                 sync.Mutex
	removed, discarded []string
}

func (r *recordingRepo) RemoveCopy(dir string) error {
	if _, err := os.Stat(dir); err == nil { // not the clearing before a copy is made
		r.mu.Lock()
		r.removed = append(r.removed, filepath.Base(dir))
		r.mu.Unlock()
	}
	return r.Repo.RemoveCopy(dir)
}

func (r *recordingRepo) SetAside(dir string) (string, bool, error) {
	r.mu.Lock()
	r.removed = append(r.removed, filepath.Base(dir))
	r.mu.Unlock()
	return r.Repo.SetAside(dir)
}

func (r *recordingRepo) DiscardCopy(dir string) error {
	r.mu.Lock()
	r.discarded = append(r.discarded, filepath.Base(dir))
	r.mu.Unlock()
	return r.Repo.DiscardCopy(dir)
}

// A timed-out attempt's agent may still run (the local and compose
// runtimes cannot stop it): its copy is deleted, never recycled for the
// retry, which gets a clean copy; a completed attempt's copy is recycled.
func TestDriveTimedOutCopyIsNeverRecycled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := newLayout(t)
	ws := l.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(l.Root, "checkpoints"), ws), []string{l.Root})
	if err != nil {
		t.Fatal(err)
	}
	repo.SetPool(filepath.Join(l.Attempts(), ".pool"), 4)
	if err := repo.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingRepo{Repo: repo}
	var retrySaw []string
	clock := newTestClock()
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		dir := l.Attempt(c.RunID, c.ID, c.Attempt)
		if c.Attempt == 1 {
			// The first attempt hangs and leaves a file behind, as a shell
			// command still running after the timeout would.
			_ = os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("late write\n"), 0o644)
			clock.tickAfter(t, 2*time.Minute)
			return nil
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			retrySaw = append(retrySaw, e.Name())
		}
		return completed(c)
	})
	st := newTestState(t, plan.Task{ID: "slow", Description: "times out once"})
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}
	o := New(Options{Layout: l, Runtime: rt, Repo: rec, TaskTimeout: time.Minute, MaxRetries: 1, Now: clock.Now, Tick: clock.ticks})
	if err := o.Drive(clock.deadline(t), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["slow"]; got != taskgraph.Completed {
		t.Fatalf("slow is %s, want completed on its retry", got)
	}
	if slices.Contains(retrySaw, "stray.txt") {
		t.Errorf("the retry's copy holds the timed-out attempt's file: %v", retrySaw)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.discarded, "slow.1") || slices.Contains(rec.removed, "slow.1") {
		t.Errorf("timed-out copy: discarded %v, recycled %v; want slow.1 discarded, not recycled", rec.discarded, rec.removed)
	}
	if !slices.Contains(rec.removed, "slow.2") {
		t.Errorf("completed copy: recycled %v, want slow.2 among them", rec.removed)
	}
	if _, err := os.Stat(l.Attempt(st.RunID, "slow", 1)); !os.IsNotExist(err) {
		t.Errorf("the timed-out attempt's copy is still there: %v", err)
	}
}

// failingCopyRepo cannot make copies, as a base image without
// git-upload-pack could not.
type failingCopyRepo struct{ *checkpoint.Repo }

func (failingCopyRepo) NewCopy(context.Context, string, string) error {
	return errors.New("git: 'upload-pack' is not a git command")
}

// A run whose attempt's copy cannot be made ends interrupted (resumable)
// with the cause in its saved state, not "running" for good.
func TestDriveCopyThatCannotBeMadeEndsTheRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := newLayout(t)
	ws := l.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(l.Root, "checkpoints"), ws), []string{l.Root})
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report { return completed(c) })
	st := newTestState(t, plan.Task{ID: "a", Description: "anything"})
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}
	err = New(Options{Layout: l, Runtime: rt, Repo: failingCopyRepo{repo}}).Drive(ctx, st)
	if err == nil || !strings.Contains(err.Error(), "upload-pack") {
		t.Fatalf("Drive: %v, want the copy's error", err)
	}
	saved, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Status != runrecord.RunInterrupted || saved.Stop == nil || saved.Stop.Reason != runrecord.StopSetupError || !strings.Contains(saved.Stop.Detail, "upload-pack") {
		t.Errorf("saved run: status %s, stop %+v; want interrupted with the copy's error", saved.Status, saved.Stop)
	}
}
