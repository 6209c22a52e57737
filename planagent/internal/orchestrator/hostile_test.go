package orchestrator

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The agent can make a FIFO in reports/ from inside its container. Opening
// one blocks until a writer appears, deaf to signals; planagent must
// refuse it at once, fail the task and go on (in a run and in a resume).
func TestDriveRefusesAFIFOReport(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.ID == "t000" {
			_ = syscall.Mkfifo(l.EventsFile(c.ID), 0o644)
			_ = syscall.Mkfifo(l.ReportFile(c.ID), 0o644)
			return nil
		}
		return completed(c)
	})
	st := newTestState(t, chain(2)...)
	done := make(chan error, 1)
	go func() { done <- New(Options{Layout: l, Runtime: rt}).Drive(t.Context(), st) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("planagent hangs on a FIFO in reports/")
	}
	var taskErr string
	for _, tk := range st.Tasks {
		if tk.ID == "t000" {
			taskErr = tk.Error
		}
	}
	if s := status(st); s["t000"] != taskgraph.Failed || s["t001"] != taskgraph.Skipped {
		t.Fatalf("statuses %v", s)
	}
	if !strings.Contains(taskErr, "not a regular file") || !strings.Contains(taskErr, "FIFO") {
		t.Errorf("t000's error %q does not say the report is a FIFO", taskErr)
	}
}

func TestResumeRefusesAFIFOReport(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	st := newTestState(t, chain(1)...)
	killedAfterDispatch(t, l, st, "t000")
	if err := syscall.Mkfifo(l.ReportFile("t000"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := runrecord.LoadState(l, "", true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- New(Options{Layout: l, Runtime: newFakeRuntime(l, completed)}).Drive(t.Context(), loaded)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("resume hangs on a FIFO in reports/")
	}
	if s := status(loaded); s["t000"] == taskgraph.InProgress || s["t000"] == taskgraph.Pending {
		t.Fatalf("statuses %v", s)
	}
}

// killedAfterDispatch saves st as a planagent killed right after it
// dispatched attempt 1 of id leaves it.
func killedAfterDispatch(t *testing.T, l volume.Layout, st *runrecord.State, id string) {
	t.Helper()
	g, _ := taskgraph.New(st.Tasks)
	_ = g.Start(id)
	st.Tasks = g.Tasks()
	st.Info[id].Attempt = 1
	st.Info[id].DispatchedAt = time.Now()
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// Links planted in volumes/context to a directory of the host (issue 36,
// item 3) must not have planagent write the overview and the task contexts
// there, nor move the host's t3/ into the run's archive: in a run and in a
// resume, nothing outside changes, and the run still completes with its
// task contexts archived.
func TestLinksInTheContextAreNotFollowed(t *testing.T) {
	t.Parallel()
	tasks := []plan.Task{{ID: "t1", Description: "task t1", Dependencies: []string{}},
		{ID: "t3", Description: "task t3", Dependencies: []string{"t1"}}}
	for _, resume := range []bool{false, true} {
		name := "run"
		if resume {
			name = "resume"
		}
		t.Run(name, func(t *testing.T) {
			l := newLayout(t)
			outside := t.TempDir()
			if err := os.MkdirAll(filepath.Join(outside, "t3"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "t3", "precious.txt"), []byte("host"), 0o644); err != nil {
				t.Fatal(err)
			}
			links := []string{l.ProjectContext(), filepath.Dir(l.TaskContext("t3")), l.RepoMapCache()}
			for _, link := range links {
				if err := os.RemoveAll(link); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, link); err != nil {
					t.Fatal(err)
				}
			}
			st := newTestState(t, tasks...)
			if resume {
				killedAfterDispatch(t, l, st, "t1")
				loaded, err := runrecord.LoadState(l, "", true)
				if err != nil {
					t.Fatal(err)
				}
				st = loaded
			}
			var log bytes.Buffer
			o := New(Options{Layout: l, Runtime: newFakeRuntime(l, completed), Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err := o.Drive(t.Context(), st); err != nil {
				t.Fatal(err)
			}

			if got := tree(t, outside); !slices.Equal(got, []string{"t3", "t3/precious.txt"}) {
				t.Errorf("outside holds %v, want only t3/precious.txt", got)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "t3", "precious.txt")); err != nil || string(b) != "host" {
				t.Errorf("the host's precious.txt: %q, %v", b, err)
			}
			if s := status(st); s["t1"] != taskgraph.Completed || s["t3"] != taskgraph.Completed {
				t.Fatalf("statuses %v", s)
			}
			archived := []string{"t1", "t3"}
			if resume {
				archived = []string{"t3"} // t1's command is sent again, its context was written before the kill
			}
			for _, id := range archived {
				if b, err := os.ReadFile(filepath.Join(l.Run(st.RunID), "tasks", id, "task-context.md")); err != nil || !strings.Contains(string(b), "task "+id) {
					t.Errorf("archived context of %s: %q, %v", id, b, err)
				}
			}
			for _, dir := range links[:2] {
				if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
					t.Errorf("%s: %v, %v: want a directory", dir, fi, err)
				}
				if !strings.Contains(log.String(), dir) {
					t.Errorf("no warning names %s:\n%s", dir, log.String())
				}
			}
		})
	}
}

// tree lists what is under dir, relative, with slashes.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
