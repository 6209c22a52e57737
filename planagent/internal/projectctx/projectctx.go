// Package projectctx is planagent's side of the context layers: it writes the
// project and task layers of the runtime context that codingagent combines
// with its templates. Every fact in these files (goal, plan, statuses,
// results) is written by code from the run state, so a flaky model can never
// lose them.
package projectctx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Manager writes the runtime context of one run.
type Manager struct {
	layout volume.Layout
	runID  string
	goal   string
	title  string
	brief  string
}

// New returns the manager of run runID.
func New(layout volume.Layout, runID, goal, title, overview string) *Manager {
	return &Manager{layout: layout, runID: runID, goal: goal, title: title, brief: overview}
}

func (m *Manager) overviewPath() string {
	return filepath.Join(m.layout.ProjectContext(), "project-overview.md")
}

// InitProject writes project-overview.md at the start of a run.
func (m *Manager) InitProject(g *taskgraph.Graph) error {
	return m.writeOverview(g, nil)
}

// UpdateProject rewrites project-overview.md after a report: progress,
// known issues and what remains.
func (m *Manager) UpdateProject(g *taskgraph.Graph, issues []string) error {
	return m.writeOverview(g, issues)
}

func (m *Manager) writeOverview(g *taskgraph.Graph, issues []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Project overview\n\n")
	fmt.Fprintf(&b, "Run `%s`, updated %s.\n\n", m.runID, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "## Goal\n\n%s\n\n", strings.TrimSpace(m.goal))
	if m.title != "" || m.brief != "" {
		fmt.Fprintf(&b, "## Plan: %s\n\n%s\n\n", m.title, strings.TrimSpace(m.brief))
	}
	fmt.Fprintf(&b, "## Progress\n\n```\n%s\n```\n\n", strings.TrimRight(g.BriefSummary(overviewTasks), "\n"))
	var remaining []string
	unfinished, total := g.Unfinished(overviewTasks / 2)
	for _, t := range unfinished {
		remaining = append(remaining, fmt.Sprintf("- %s: %s", t.ID, oneLine(titleOf(t))))
	}
	if more := total - len(unfinished); more > 0 {
		remaining = append(remaining, fmt.Sprintf("- … and %d more", more))
	}
	if len(remaining) > 0 {
		fmt.Fprintf(&b, "## Remaining tasks\n\n%s\n\n", strings.Join(remaining, "\n"))
	}
	if len(issues) > 0 {
		fmt.Fprintf(&b, "## Known issues\n\n")
		for _, is := range issues {
			fmt.Fprintf(&b, "- %s\n", oneLine(is))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Conventions\n\n- Work only inside the workspace; other tasks of this plan may run before or after yours.\n" +
		"- Leave the workspace building and its tests passing; say in your final answer what you changed.\n")
	if err := os.MkdirAll(m.layout.ProjectContext(), 0o755); err != nil {
		return fmt.Errorf("project context: %w", err)
	}
	return writeDerived(m.overviewPath(), []byte(b.String()))
}

// overviewTasks bounds the tasks project-overview.md lists: every agent
// reads it, so it must not grow with a 10 000-task plan.
const overviewTasks = 60

// writeDerived replaces path atomically but without fsync: the overview is
// derived from the run state and rewritten when a run starts or resumes,
// so a crash may lose the latest copy without losing anything, and the
// fsyncs (two per write) were a large share of a task's orchestration cost.
func writeDerived(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if err := f.Chmod(0o644); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// WriteTaskContext writes context/task/<id>/task-context.md before the task
// is dispatched: what to do, how it is accepted, what its dependencies
// produced and what happened in earlier attempts.
func (m *Manager) WriteTaskContext(t taskgraph.Task, deps []taskgraph.Task, history []string) error {
	if err := protocol.ValidateID(t.ID); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Task %s: %s\n\n", t.ID, titleOf(t))
	fmt.Fprintf(&b, "Part of run `%s` (goal: %s).\n\n", m.runID, oneLine(m.goal))
	fmt.Fprintf(&b, "## Description\n\n%s\n\n", strings.TrimSpace(t.Description))
	if len(t.Acceptance) > 0 {
		b.WriteString("## Acceptance\n\nThese commands are run in the workspace after you report done; the task counts as completed only if each exits 0:\n\n")
		for _, a := range t.Acceptance {
			fmt.Fprintf(&b, "- `%s`\n", a)
		}
		b.WriteString("\n")
	}
	if len(deps) > 0 {
		b.WriteString("## Results of the tasks this one depends on\n\n")
		for _, d := range deps {
			fmt.Fprintf(&b, "- %s (%s): %s\n", d.ID, d.Status, oneLine(d.Result))
		}
		b.WriteString("\n")
	}
	if len(history) > 0 {
		b.WriteString("## History\n\n")
		for _, h := range history {
			fmt.Fprintf(&b, "- %s\n", oneLine(h))
		}
		b.WriteString("\n")
	}
	dir := m.layout.TaskContext(t.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("task context %s: %w", t.ID, err)
	}
	return protocol.WriteFileAtomic(filepath.Join(dir, "task-context.md"), []byte(b.String()), 0o644)
}

// CleanupTask moves a finished task's context into the run's archive
// (runs/<run>/tasks/<id>/), so it leaves the runtime tree but is not lost.
func (m *Manager) CleanupTask(id string) error {
	if err := protocol.ValidateID(id); err != nil {
		return err
	}
	src := m.layout.TaskContext(id)
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	dst := filepath.Join(m.layout.Run(m.runID), "tasks", id)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("archive task context %s: %w", id, err)
	}
	_ = os.RemoveAll(dst) // an earlier attempt's archive: the newest wins
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("archive task context %s: %w", id, err)
	}
	return nil
}

func titleOf(t taskgraph.Task) string {
	if t.Title != "" {
		return t.Title
	}
	return oneLine(t.Description)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}
