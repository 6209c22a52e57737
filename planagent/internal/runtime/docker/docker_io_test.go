package docker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// A report the agent writes while its container runs is not in reports/
// (where the orchestrator would take it) until the container is gone.
func TestDockerFakeReportOnlyAfterTheContainerIsGone(t *testing.T) {
	t.Parallel() // its own fake engine and volumes; it waits out three polls
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	writeReport(t, d.opts.Volumes, 1)
	time.Sleep(3 * eventsPoll)
	if _, err := os.Lstat(d.opts.Volumes.ReportFile("t1")); err == nil {
		t.Fatal("the report is in reports/ while its container runs")
	}
	fake.exit(firstID(fake), 0, false, "")
	poll.Until(t, 30*time.Second, "the report after the container's removal", func() bool {
		_, err := os.Lstat(d.opts.Volumes.ReportFile("t1"))
		return err == nil
	})
	if n := fake.live(); n != 0 {
		t.Errorf("the report was taken with %d containers not removed", n)
	}
}

// The container's own volumes hold its command and context layers, copies
// of the run's, and nothing of other tasks; a link planted in the run's
// context is not followed into them. What the agent adds to the memory and
// its session come back once it is gone; its events are followed live.
func TestDockerFakeOwnVolumes(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	v := d.opts.Volumes
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(v.ProjectContext(), "project-overview.md"), "overview")
	mustWrite(t, filepath.Join(v.TaskContext("t1"), "task-context.md"), "t1 context")
	mustWrite(t, filepath.Join(v.TaskContext("t2"), "task-context.md"), "t2 context")
	mustWrite(t, v.Memory(), "- old fact\n")
	if err := os.Symlink(outside, filepath.Join(v.ProjectContext(), "linked")); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	own, _ := volume.New(v.AttemptIO("r1", "t1", 1), "")
	for p, want := range map[string]string{
		own.CommandFile("t1"): "task t1",
		filepath.Join(own.ProjectContext(), "project-overview.md"): "overview",
		filepath.Join(own.TaskContext("t1"), "task-context.md"):    "t1 context",
		own.Memory(): "- old fact",
	} {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	for _, p := range []string{own.TaskContext("t2"), own.CommandFile("t2"), filepath.Join(own.ProjectContext(), "linked")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is in the attempt's own volumes", p)
		}
	}
	mustWrite(t, own.EventsFile("t1"), `{"type":"task_start"}`+"\n")
	poll.Until(t, 30*time.Second, "the events followed onto reports/", func() bool {
		b, _ := os.ReadFile(v.EventsFile("t1"))
		return strings.Contains(string(b), "task_start")
	})
	mustWrite(t, own.Memory(), "- old fact\n- new fact\n")
	session := v.SessionFile("r1", "t1", a.Rel)
	mustWrite(t, filepath.Join(own.Sessions(), filepath.Base(session)), `{"role":"user"}`+"\n")
	mustWrite(t, v.Memory(), "- old fact\n- a parallel task's fact\n") // changed meanwhile
	writeReport(t, v, 1)
	fake.exit(firstID(fake), 0, false, "")
	poll.Until(t, 30*time.Second, "the report", func() bool {
		_, err := protocol.ReadReport(v.ReportFile("t1"))
		return err == nil
	})
	if b, _ := os.ReadFile(v.Memory()); string(b) != "- old fact\n- a parallel task's fact\n- new fact\n" {
		t.Errorf("memory = %q, want both tasks' facts", b)
	}
	if b, _ := os.ReadFile(session); !strings.Contains(string(b), "user") {
		t.Errorf("session = %q", b)
	}
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tree the container left unreadable to its owner is still removed.
func TestRemoveTreeUnreadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "own")
	mustWrite(t, filepath.Join(dir, "a", "b", "f"), "x")
	if err := os.Chmod(filepath.Join(dir, "a", "b"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "a"), 0o100); err != nil {
		t.Fatal(err)
	}
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Error("the tree is still there")
	}
}

// A container the engine will not remove may still run: its report is not
// read, and the Exit says its copy must not be reused.
func TestDockerFakeUnremovableContainerIsNotRead(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	id := firstID(fake)
	fake.mu.Lock()
	fake.removeErr = map[string]error{id: errors.New("device or resource busy")}
	fake.mu.Unlock()
	writeReport(t, d.opts.Volumes, 1)
	fake.exit(id, 0, false, "")
	select {
	case ex := <-d.Exited():
		if !ex.Unfenced || !strings.Contains(ex.Err.Error(), "could not be removed") {
			t.Errorf("Exit = %+v, want an unfenced one naming the removal", ex)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no Exit")
	}
	if _, err := os.Lstat(d.opts.Volumes.ReportFile("t1")); err == nil {
		t.Error("the report of a container that may still run was taken")
	}
}

// Two attempts of t1 side by side: each container is given its own
// command (read from the run's commands/t1@<n>.md) under the name it
// knows, commands/t1.md, and each report comes back under its stem.
func TestDockerFakeAttemptsByStem(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, _ := fakeDocker(t, fake)
	v := d.opts.Volumes
	for n := 1; n <= 2; n++ {
		stem := protocol.Stem("t1", n)
		cmd := &protocol.Command{ID: "t1", RunID: "r1", Attempt: n, Title: "task t1", Body: "attempt " + stem}
		if err := protocol.WriteCommand(v.CommandFile(stem), cmd); err != nil {
			t.Fatal(err)
		}
		a := Attempt{RunID: "r1", TaskID: "t1", Attempt: n, Dir: v.Attempt("r1", "t1", n), Rel: v.AttemptRel("r1", "t1", n), Stem: stem}
		if err := os.MkdirAll(a.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := d.Launch(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		own, err := volume.New(v.AttemptIO("r1", "t1", n), "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := protocol.ReadCommand(own.CommandFile("t1"))
		if err != nil || got.Attempt != n || !strings.Contains(got.Body, stem) {
			t.Fatalf("attempt %d's own command: %+v, %v", n, got, err)
		}
		rep := &protocol.Report{ID: "t1", RunID: "r1", Attempt: n, Status: protocol.StatusCompleted, Summary: "done " + stem}
		if err := protocol.WriteReport(own.ReportFile("t1"), rep); err != nil {
			t.Fatal(err)
		}
	}
	fake.mu.Lock()
	var ids []string
	for id := range fake.containers {
		ids = append(ids, id)
	}
	fake.mu.Unlock()
	for _, id := range ids {
		fake.exit(id, 0, false, "")
	}
	for n := 1; n <= 2; n++ {
		stem := protocol.Stem("t1", n)
		poll.Until(t, 30*time.Second, "the report of "+stem, func() bool {
			rep, err := protocol.ReadReport(v.ReportFile(stem))
			return err == nil && rep.Attempt == n && rep.Summary == "done "+stem
		})
	}
	if _, err := os.Lstat(v.ReportFile("t1")); err == nil {
		t.Error("a report under the bare task id: the attempts' stems must keep them apart")
	}
}
