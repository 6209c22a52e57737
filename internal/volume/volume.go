// Package volume names every path of the shared volumes tree, so the two
// programs (and the container mounts) agree on one layout.
//
// Only the four mounted directories (context, commands, reports, workspace)
// are visible inside the container, so everything the watcher and the planner
// must both see lives inside one of them.
package volume

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Layout is the volumes tree rooted at Root. Workspace may point elsewhere
// (an existing project) when --workspace is given.
type Layout struct {
	Root      string
	workspace string
}

// New returns the layout for root; workspace overrides <root>/workspace when
// non-empty. Both are made absolute so they can be bind-mounted.
func New(root, workspace string) (Layout, error) {
	r, err := filepath.Abs(root)
	if err != nil {
		return Layout{}, fmt.Errorf("volumes dir %q: %w", root, err)
	}
	l := Layout{Root: r}
	if workspace != "" {
		w, err := filepath.Abs(workspace)
		if err != nil {
			return Layout{}, fmt.Errorf("workspace dir %q: %w", workspace, err)
		}
		l.workspace = w
	}
	return l, nil
}

// Context is the runtime context dir (the layers' runtime-dir).
func (l Layout) Context() string { return filepath.Join(l.Root, "context") }

// ProjectContext holds the project layer written by planagent.
func (l Layout) ProjectContext() string { return filepath.Join(l.Context(), "project") }

// TaskContext holds the task layer of one task. id must be a validated task id.
func (l Layout) TaskContext(id string) string { return filepath.Join(l.Context(), "task", id) }

// Memory is the long-term memory file distilled at the end of tasks. It is
// outside the layer directories so the combiner does not pick it up twice.
func (l Layout) Memory() string { return filepath.Join(l.Context(), "memory.md") }

// Sessions holds conversation histories as JSONL, one file per task or chat session.
func (l Layout) Sessions() string { return filepath.Join(l.Context(), "sessions") }

// SessionFile is the conversation of task id in run runID working in
// workspace (a copy's path relative to Root, or "" for the workspace
// itself): an attempt in its own copy has its own session.
func (l Layout) SessionFile(runID, id, workspace string) string {
	if workspace != "" {
		return filepath.Join(l.Sessions(), runID+"--"+path.Base(workspace)+".jsonl")
	}
	return filepath.Join(l.Sessions(), runID+"--"+id+".jsonl")
}

// RepoMapCache keeps the repo map's parsed files between tasks.
func (l Layout) RepoMapCache() string { return filepath.Join(l.Context(), ".repomap-cache") }

// Commands is where planagent drops command files.
func (l Layout) Commands() string { return filepath.Join(l.Root, "commands") }

// CommandFile is commands/<id>.md.
func (l Layout) CommandFile(id string) string { return filepath.Join(l.Commands(), id+".md") }

// Claimed holds commands a watcher has taken (renamed there atomically, so
// exactly one watcher wins). Same filesystem as Commands, so rename is atomic.
func (l Layout) Claimed() string { return filepath.Join(l.Commands(), ".claimed") }

// ClaimFile is .claimed/<id>.md, the command of task id a watcher took.
func (l Layout) ClaimFile(id string) string { return filepath.Join(l.Claimed(), id+".md") }

// OwnerSuffix ends the name of a claim's owner file.
const OwnerSuffix = ".owner.json"

// OwnerFile is .claimed/<id>.owner.json: which watcher (id, pid, host) holds
// the claim of task id.
func (l Layout) OwnerFile(id string) string { return filepath.Join(l.Claimed(), id+OwnerSuffix) }

// Reports is where codingagent writes reports.
func (l Layout) Reports() string { return filepath.Join(l.Root, "reports") }

// ReportFile is reports/<id>.md.
func (l Layout) ReportFile(id string) string { return filepath.Join(l.Reports(), id+".md") }

// EventsFile is reports/<id>.events.jsonl, the progress stream of a running task.
func (l Layout) EventsFile(id string) string { return filepath.Join(l.Reports(), id+".events.jsonl") }

// Watchers holds one heartbeat file per live watcher (<watcher-id>.json).
func (l Layout) Watchers() string { return filepath.Join(l.Reports(), ".watchers") }

// Summary is reports/summary.md, the run summary.
func (l Layout) Summary() string { return filepath.Join(l.Reports(), "summary.md") }

// EgressRefusals is egress/refusals.jsonl, where the compose file's
// gateway service (planagent gateway --refusals) appends what its egress
// proxy refused, for the runs that reuse the compose watcher. Only the
// gateway mounts egress/: the watcher has no way to it.
func (l Layout) EgressRefusals() string { return filepath.Join(l.Root, "egress", "refusals.jsonl") }

// ExplicitWorkspace reports whether the workspace was named (--workspace,
// workspace_dir) rather than the default <volumes>/workspace. A named one
// must exist: only the default is ours to create.
func (l Layout) ExplicitWorkspace() bool { return l.workspace != "" }

// CheckWorkspace fails when a named workspace is missing or not a directory.
func (l Layout) CheckWorkspace() error {
	if !l.ExplicitWorkspace() {
		return nil
	}
	fi, err := os.Stat(l.workspace)
	if err != nil {
		return fmt.Errorf("workspace %s does not exist: create it or name an existing directory (only the default <volumes>/workspace is created)", l.workspace)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace %s is not a directory: name a directory", l.workspace)
	}
	return nil
}

// VolumesInWorkspace returns the volumes dir relative to the workspace when
// it lies inside it (`--workspace .` run from the project): that part of
// the workspace is planagent's, not the project's.
func (l Layout) VolumesInWorkspace() (string, bool) {
	rel, err := filepath.Rel(l.Workspace(), l.Root)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// Workspace is the directory the coding agent works in.
func (l Layout) Workspace() string {
	if l.workspace != "" {
		return l.workspace
	}
	return filepath.Join(l.Root, "workspace")
}

// Attempts holds the per-attempt copies of the workspace
// (attempts/<run>/<task>.<attempt>/): each task attempt works in its own
// copy, thrown away when the attempt fails, so a retry starts clean.
func (l Layout) Attempts() string { return filepath.Join(l.Root, "attempts") }

// Attempt is the copy of the workspace task id works in on its attempt n.
func (l Layout) Attempt(runID, id string, n int) string {
	return filepath.Join(l.Attempts(), runID, fmt.Sprintf("%s.%d", id, n))
}

// AcceptSuffix ends the name of the copy beside an attempt's
// (<task>.<attempt>.accept) where the acceptance commands run on the tree
// the attempt merged into.
const AcceptSuffix = ".accept"

// AttemptOf is the task and attempt whose copy dir is under run runID
// (Attempt, or the acceptance copy beside it); ok is false for any other
// directory, the workspace among them. A task id may hold dots: the
// attempt is the last part.
func (l Layout) AttemptOf(runID, dir string) (id string, n int, ok bool) {
	dir = filepath.Clean(dir)
	if filepath.Dir(dir) != filepath.Join(l.Attempts(), runID) {
		return "", 0, false
	}
	base := strings.TrimSuffix(filepath.Base(dir), AcceptSuffix)
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(base[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return base[:i], n, true
}

// AttemptRel is Attempt relative to Root, with slashes: what a command file
// names, so a watcher that mounts the volumes elsewhere finds the same copy.
func (l Layout) AttemptRel(runID, id string, n int) string {
	return fmt.Sprintf("attempts/%s/%s.%d", runID, id, n)
}

// IO holds each container attempt's own volumes (io/<run>/<task>.<attempt>/):
// its command, context and memory copied in by planagent, its report,
// events and session written by the agent. A container mounts only its own,
// and planagent reads what came out only once the container is gone.
func (l Layout) IO() string { return filepath.Join(l.Root, "io") }

// AttemptIO is the own volumes of task id's attempt n in a container.
func (l Layout) AttemptIO(runID, id string, n int) string {
	return filepath.Join(l.IO(), runID, fmt.Sprintf("%s.%d", id, n))
}

// Runs holds planagent's durable run state (host side only; not mounted).
func (l Layout) Runs() string { return filepath.Join(l.Root, "runs") }

// Run is runs/<run-id>.
func (l Layout) Run(runID string) string { return filepath.Join(l.Runs(), runID) }

// Ensure creates the directories of the layout that must exist.
// A named workspace is not created: it must exist (CheckWorkspace).
func (l Layout) Ensure() error {
	if err := l.CheckWorkspace(); err != nil {
		return err
	}
	dirs := []string{l.ProjectContext(), filepath.Join(l.Context(), "task"), l.Sessions(),
		l.Commands(), l.Claimed(), l.Reports(), l.Watchers(), l.Attempts(), l.Runs()}
	if !l.ExplicitWorkspace() {
		dirs = append(dirs, l.Workspace())
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create volumes dir: %w", err)
		}
	}
	return nil
}
