package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// execRuntime is the fake watcher with acceptance commands that fail as
// exec says (nil: they run for real, in a shell).
type execRuntime struct {
	*fakeRuntime
	exec func(ctx context.Context, dir, command string) (attempt.ExecResult, error)
}

func (e *execRuntime) Exec(ctx context.Context, dir, command string, timeout time.Duration) (attempt.ExecResult, error) {
	if e.exec != nil {
		return e.exec(ctx, dir, command)
	}
	return attempt.ShellExec(ctx, dir, command, timeout)
}

// haltedByTheMachine checks the run a fault of the machine stopped: Drive's
// error names the fault and the resume, the saved run is interrupted
// (setup_error) and findable by a plain resume, and the task is pending
// again with the attempt the fault ended not counted against its retries.
func haltedByTheMachine(t *testing.T, l volume.Layout, err error, id, fault string) *runrecord.State {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), fault) || !strings.Contains(err.Error(), "planagent resume") {
		t.Fatalf("Drive = %v, want the fault (%q) and the resume named", err, fault)
	}
	loaded, lerr := runrecord.LoadState(l, "", true) // what a plain `resume` finds
	if lerr != nil {
		t.Fatalf("a plain resume finds no run: %v", lerr)
	}
	if loaded.Status != runrecord.RunInterrupted || loaded.Stop == nil || loaded.Stop.Reason != runrecord.StopSetupError {
		t.Fatalf("run %s, stop %+v: want interrupted, setup_error", loaded.Status, loaded.Stop)
	}
	g, gerr := taskgraph.New(loaded.Tasks)
	if gerr != nil {
		t.Fatal(gerr)
	}
	tk, _ := g.Get(id)
	if tk.Status != taskgraph.Pending || tk.Attempts-tk.Granted != 0 {
		t.Fatalf("task %s is %s with %d attempts, %d granted: want pending, the attempt not counted", id, tk.Status, tk.Attempts, tk.Granted)
	}
	return loaded
}

// resumed drives the halted run again on a fixed machine and wants it
// completed with --max-retries 0: the fault's attempt did not count.
func resumed(t *testing.T, l volume.Layout, st *runrecord.State, rt Runtime) {
	t.Helper()
	if err := New(Options{Layout: l, Runtime: rt, MaxRetries: 0}).Drive(t.Context(), st); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("resumed run %s, tasks %v", st.Status, status(st))
	}
}

// A full disk while an acceptance command runs (the runtime cannot even
// start it: ENOSPC from the engine) stops the run resumable; a plain
// resume redoes the task without --retry-failed.
func TestDriveFullDiskInAcceptanceIsResumable(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var full atomic.Bool
	full.Store(true)
	rt := &execRuntime{fakeRuntime: newFakeRuntime(l, completed)}
	rt.exec = func(ctx context.Context, dir, command string) (attempt.ExecResult, error) {
		if full.Load() {
			return attempt.ExecResult{ExitCode: -1}, fmt.Errorf("create a container from img: %w", &os.PathError{Op: "write", Path: "/var/lib/docker/x", Err: syscall.ENOSPC})
		}
		return attempt.ShellExec(ctx, dir, command, time.Minute)
	}
	st := newTestState(t, plan.Task{ID: "a", Description: "build", Acceptance: []string{"true"}}, plan.Task{ID: "b", Description: "after a", Dependencies: []string{"a"}})
	err := New(Options{Layout: l, Runtime: rt, MaxRetries: 0}).Drive(t.Context(), st)
	loaded := haltedByTheMachine(t, l, err, "a", "no space left on device")
	if got := status(loaded)["b"]; got != taskgraph.Pending {
		t.Fatalf("b is %s: a fault of the machine skipped its dependant", got)
	}
	full.Store(false)
	resumed(t, l, loaded, rt)
}

// The engine that stops answering during an acceptance command is the
// machine's fault too, not the task's.
func TestDriveEngineGoneInAcceptanceIsResumable(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var gone atomic.Bool
	gone.Store(true)
	rt := &execRuntime{fakeRuntime: newFakeRuntime(l, completed)}
	rt.exec = func(ctx context.Context, dir, command string) (attempt.ExecResult, error) {
		if gone.Load() {
			return attempt.ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: lost track of container 0123: %w: unexpected EOF", command, envfault.ErrEngine)
		}
		return attempt.ShellExec(ctx, dir, command, time.Minute)
	}
	st := newTestState(t, plan.Task{ID: "a", Description: "build", Acceptance: []string{"true"}})
	err := New(Options{Layout: l, Runtime: rt, MaxRetries: 0}).Drive(t.Context(), st)
	loaded := haltedByTheMachine(t, l, err, "a", "start the container engine again")
	gone.Store(false)
	resumed(t, l, loaded, rt)
}

// An acceptance command that fails writing to a full device (a real
// ENOSPC: /dev/full) names it in its output: the run stops resumable.
func TestDriveAcceptanceOnAFullDeviceIsResumable(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("this test writes to /dev/full (Linux): %v", err)
	}
	l := newLayout(t)
	cmd := "cat " + filepath.Join(l.Root, "..", "fill") + " > /dev/full"
	if err := os.WriteFile(filepath.Join(l.Root, "..", "fill"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := &execRuntime{fakeRuntime: newFakeRuntime(l, completed)}
	st := newTestState(t, plan.Task{ID: "a", Description: "build", Acceptance: []string{cmd}})
	err := New(Options{Layout: l, Runtime: rt, MaxRetries: 0}).Drive(t.Context(), st)
	loaded := haltedByTheMachine(t, l, err, "a", "No space left on device")
	// The disk is freed: the same command now writes where there is room.
	loaded.Tasks[0].Acceptance = []string{"cat " + filepath.Join(l.Root, "..", "fill") + " > /dev/null"}
	resumed(t, l, loaded, rt)
}

// The agent that fails writing a file on a full disk (its report's error
// says so) leaves its task to the resume, not failed.
func TestDriveAgentOnAFullDiskIsResumable(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var full atomic.Bool
	full.Store(true)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if !full.Load() {
			return completed(c)
		}
		werr := &os.PathError{Op: "write", Path: "main.go", Err: syscall.ENOSPC}
		return &protocol.Report{ID: c.ID, RunID: c.RunID, Attempt: c.Attempt, Status: protocol.StatusFailed,
			Summary: "could not write", Error: "write_file: " + werr.Error()}
	})
	st := newTestState(t, chain(2)...)
	err := New(Options{Layout: l, Runtime: rt, MaxRetries: 0}).Drive(t.Context(), st)
	loaded := haltedByTheMachine(t, l, err, "t000", "no space left on device")
	full.Store(false)
	resumed(t, l, loaded, rt)
	if n := rt.count("t000"); n != 2 {
		t.Errorf("t000 dispatched %d times, want 2 (the full disk's and the resume's)", n)
	}
}

// A real full disk, when the test may mount one (root, as CI runs): the
// workspace is a 256 KiB tmpfs, the agent's write of a file fills it, and
// after the file is removed a plain resume finishes the run.
func TestDriveRealTmpfsFullIsResumable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root); TestDriveAgentOnAFullDiskIsResumable and TestDriveAcceptanceOnAFullDeviceIsResumable cover the same path with a real ENOSPC from /dev/full and an injected one")
	}
	ws := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", ws).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs as root: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", ws).Run() })
	l, err := volume.New(t.TempDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(ws, "big.bin")
	var full atomic.Bool
	full.Store(true)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		size := 1 << 20 // more than the disk holds
		if !full.Load() {
			size = 1 << 10
		}
		if werr := os.WriteFile(big, make([]byte, size), 0o644); werr != nil {
			if !errors.Is(werr, syscall.ENOSPC) {
				t.Errorf("writing 1 MiB on a 256 KiB tmpfs: %v, want ENOSPC", werr)
			}
			return &protocol.Report{ID: c.ID, RunID: c.RunID, Attempt: c.Attempt, Status: protocol.StatusFailed, Error: "write_file: " + werr.Error()}
		}
		return completed(c)
	})
	st := newTestState(t, chain(1)...)
	err = New(Options{Layout: l, Runtime: rt, MaxRetries: 0}).Drive(t.Context(), st)
	loaded := haltedByTheMachine(t, l, err, "t000", "no space left on device")
	if err := os.Remove(big); err != nil { // the operator frees the disk
		t.Fatal(err)
	}
	full.Store(false)
	resumed(t, l, loaded, rt)
}
