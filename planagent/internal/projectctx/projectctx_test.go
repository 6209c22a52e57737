package projectctx

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

func newManager(t *testing.T) (*Manager, volume.Layout) {
	t.Helper()
	m, l, _ := newLoggedManager(t)
	return m, l
}

// newLoggedManager is newManager with what its root logged.
func newLoggedManager(t *testing.T) (*Manager, volume.Layout, *bytes.Buffer) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	root, err := safefs.OpenRoot(l.Root, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	return New(root, l, "run-1", "Add a health endpoint", "Health", "Add GET /health and a test."), l, &log
}

func graph(t *testing.T) *taskgraph.Graph {
	t.Helper()
	g, err := taskgraph.New([]taskgraph.Task{
		{ID: "server", Title: "HTTP server", Description: "create the server"},
		{ID: "health", Description: "add /health\nwith a test", Dependencies: []string{"server"}, Acceptance: []string{"go test ./..."}},
		{ID: "docs", Title: "Docs", Description: "document it", Dependencies: []string{"health"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProjectOverview(t *testing.T) {
	m, l := newManager(t)
	g := graph(t)
	if err := m.InitProject(g); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(l.ProjectContext(), "project-overview.md")
	init := read(t, path)
	for _, want := range []string{"## Goal\n\nAdd a health endpoint", "## Plan: Health", "Add GET /health and a test.",
		"[ ] server: HTTP server", "## Remaining tasks", "- docs: Docs", "## Conventions"} {
		if !strings.Contains(init, want) {
			t.Errorf("initial overview lacks %q:\n%s", want, init)
		}
	}
	if strings.Contains(init, "## Known issues") {
		t.Errorf("known issues before any report:\n%s", init)
	}

	// After reports: progress, the issues and what remains come from the graph.
	for _, step := range []func() error{
		func() error { return g.Start("server") },
		func() error { return g.Complete("server", "server in cmd/server") },
		func() error { return g.Start("health") },
		func() error { return g.Fail("health", "tests fail") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.UpdateProject(g, []string{"health failed: tests fail"}); err != nil {
		t.Fatal(err)
	}
	upd := read(t, path)
	for _, want := range []string{"[X] server: HTTP server — server in cmd/server", "[!] health", "[-] docs: Docs (skipped: depends on health)",
		"## Known issues\n\n- health failed: tests fail"} {
		if !strings.Contains(upd, want) {
			t.Errorf("updated overview lacks %q:\n%s", want, upd)
		}
	}
	if strings.Contains(upd, "## Remaining tasks") {
		t.Errorf("nothing remains, yet:\n%s", upd)
	}
	if left, _ := filepath.Glob(filepath.Join(l.ProjectContext(), ".*")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

func TestTaskContextAndCleanup(t *testing.T) {
	m, l := newManager(t)
	g := graph(t)
	_ = g.Start("server")
	_ = g.Complete("server", "server in cmd/server")
	task, _ := g.Get("health")
	dep, _ := g.Get("server")
	if err := m.WriteTaskContext(task, []taskgraph.Task{dep}, []string{"attempt 1: failed: tests fail"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(l.TaskContext("health"), "task-context.md")
	got := read(t, path)
	for _, want := range []string{"# Task health: add /health with a test", "goal: Add a health endpoint", "## Description\n\nadd /health\nwith a test",
		"## Acceptance", "- `go test ./...`", "- server (completed): server in cmd/server", "## History\n\n- attempt 1: failed: tests fail"} {
		if !strings.Contains(got, want) {
			t.Errorf("task context lacks %q:\n%s", want, got)
		}
	}

	// Cleanup archives the context with the run; a second cleanup of a later
	// attempt replaces the archive; cleaning a task without context is fine.
	if err := m.CleanupTask("health"); err != nil {
		t.Fatal(err)
	}
	archived := filepath.Join(l.Run("run-1"), "tasks", "health", "task-context.md")
	if read(t, archived) != got {
		t.Errorf("archived context differs")
	}
	if _, err := os.Stat(l.TaskContext("health")); !os.IsNotExist(err) {
		t.Errorf("runtime task context still there: %v", err)
	}
	if err := m.WriteTaskContext(task, nil, []string{"attempt 2"}); err != nil {
		t.Fatal(err)
	}
	if err := m.CleanupTask("health"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(t, archived), "attempt 2") {
		t.Errorf("archive not replaced by the later attempt")
	}
	if err := m.CleanupTask("docs"); err != nil {
		t.Errorf("cleanup of a task without context: %v", err)
	}
}

func TestHostileIDsAreRefused(t *testing.T) {
	m, l := newManager(t)
	if err := m.WriteTaskContext(taskgraph.Task{ID: "../escape", Description: "x"}, nil, nil); err == nil {
		t.Error("WriteTaskContext accepted ../escape")
	}
	if err := m.CleanupTask("../../x"); err == nil {
		t.Error("CleanupTask accepted ../../x")
	}
	if _, err := os.Stat(filepath.Join(l.Context(), "escape")); !os.IsNotExist(err) {
		t.Errorf("a file was written outside the task dir: %v", err)
	}
}

// The agents can write context/ (issue 36, item 3): links planted there to a
// directory of the host must not have the overview and the task contexts
// written there, nor the host's t3/ moved into the run's archive. Each is
// replaced by a real directory, with a warning naming it.
func TestLinksInTheContextAreNotFollowed(t *testing.T) {
	m, l, log := newLoggedManager(t)
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "t3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "t3", "precious.txt"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.Context(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{l.ProjectContext(), filepath.Dir(l.TaskContext("t3"))} {
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
	}
	g, err := taskgraph.New([]taskgraph.Task{{ID: "t3", Description: "do t3"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitProject(g); err != nil {
		t.Fatal(err)
	}
	task, _ := g.Get("t3")
	if err := m.WriteTaskContext(task, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.CleanupTask("t3"); err != nil {
		t.Fatal(err)
	}

	var found []string
	_ = filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
		if p != outside {
			rel, _ := filepath.Rel(outside, p)
			found = append(found, rel)
		}
		return nil
	})
	if want := []string{"t3", filepath.Join("t3", "precious.txt")}; strings.Join(found, ",") != strings.Join(want, ",") {
		t.Errorf("outside holds %v, want %v", found, want)
	}
	if read(t, filepath.Join(outside, "t3", "precious.txt")) != "host" {
		t.Error("the host's precious.txt changed")
	}
	if !strings.Contains(read(t, filepath.Join(l.ProjectContext(), "project-overview.md")), "do t3") {
		t.Error("no overview in context/project")
	}
	if !strings.Contains(read(t, filepath.Join(l.Run("run-1"), "tasks", "t3", "task-context.md")), "do t3") {
		t.Error("no archived task context")
	}
	for _, dir := range []string{l.ProjectContext(), filepath.Dir(l.TaskContext("t3"))} {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v: want a directory", dir, describe(fi, err))
		}
		if !strings.Contains(log.String(), dir) {
			t.Errorf("no warning names %s:\n%s", dir, log)
		}
	}
}

// A link planted as the task's own context dir is not moved into the
// archive (whoever reads it there would follow it), nor is its target.
func TestLinkAsTheTaskContextIsNotArchived(t *testing.T) {
	m, l, _ := newLoggedManager(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "precious.txt"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(l.TaskContext("t3")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, l.TaskContext("t3")); err != nil {
		t.Fatal(err)
	}
	if err := m.CleanupTask("t3"); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(outside, "precious.txt")) != "host" {
		t.Error("the host's precious.txt changed")
	}
	archived := filepath.Join(l.Run("run-1"), "tasks", "t3")
	if fi, err := os.Lstat(archived); err == nil && !fi.IsDir() {
		t.Errorf("archived %s is %v", archived, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(archived, "precious.txt")); err == nil {
		t.Error("the host's file is reachable from the archive")
	}
}

// describe is what Lstat found, for a failure.
func describe(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return fi.Mode().String()
}
