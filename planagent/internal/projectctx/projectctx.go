// Package projectctx is planagent's side of the context layers: it writes the
// project and task layers of the runtime context that codingagent combines
// with its templates. Every fact in these files (goal, plan, statuses,
// results) is written by code from the run state, so a flaky model can never
// lose them.
package projectctx

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Manager writes the runtime context of one run. Every write goes through
// root, opened on the layout's root: the context dir is the agents' to
// write too, and a link they plant there must not be followed.
type Manager struct {
	root   *safefs.Root
	layout volume.Layout
	runID  string
	goal   string
	title  string
	brief  string
}

// New returns the manager of run runID, writing through root (opened on
// layout.Root).
func New(root *safefs.Root, layout volume.Layout, runID, goal, title, overview string) *Manager {
	return &Manager{root: root, layout: layout, runID: runID, goal: goal, title: title, brief: overview}
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
	// Without fsync: the overview is derived from the run state and
	// rewritten when a run starts or resumes, so a crash may lose the
	// latest copy without losing anything, and the fsyncs (two per write)
	// were a large share of a task's orchestration cost.
	if err := m.root.ReplaceFile(m.overviewPath(), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("project context: %w", err)
	}
	return nil
}

// overviewTasks bounds the tasks project-overview.md lists: every agent
// reads it, so it must not grow with a 10 000-task plan.
const overviewTasks = 60

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
	if err := m.root.WriteFileAtomic(filepath.Join(m.layout.TaskContext(t.ID), "task-context.md"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("task context %s: %w", t.ID, err)
	}
	return nil
}

// CleanupTask moves a finished task's context into the run's archive
// (runs/<run>/tasks/<id>/), so it leaves the runtime tree but is not lost.
func (m *Manager) CleanupTask(id string) error {
	if err := protocol.ValidateID(id); err != nil {
		return err
	}
	src := m.layout.TaskContext(id)
	mode, err := m.root.Mode(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive task context %s: %w", id, err)
	}
	if !mode.IsDir() {
		// A link or file planted there goes, logged, rather than into the
		// archive, where whoever reads it would follow it.
		if err := m.root.MkdirAll(src); err != nil {
			return fmt.Errorf("archive task context %s: %w", id, err)
		}
	}
	dst := filepath.Join(m.layout.Run(m.runID), "tasks", id)
	if err := m.root.RemoveAll(dst); err != nil { // an earlier attempt's archive: the newest wins
		return fmt.Errorf("archive task context %s: %w", id, err)
	}
	if err := m.root.Rename(src, dst); err != nil {
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
