// Package layout is what an attempt's container looks like to both
// container runtimes (docker, kube): where planagent puts the agent and
// the volumes in any image, the labels on everything they create, the
// default image, and how long stopping and an acceptance command may take.
// It holds values, not a client: neither engine's library is linked.
package layout

import (
	"path/filepath"
	"time"

	"github.com/codeagent/codeagent/internal/volume"
)

// DefaultImage is what `make image` (scripts/image.sh) tags. Any image with
// /bin/sh does: planagent brings the codingagent binary into it.
const DefaultImage = "codeagent/codingagent:latest"

// Labels on every container (and Job, Pod, Secret) a runtime creates, so
// a later run can find and remove the leftovers of a crashed one.
const (
	LabelManaged = "codeagent.managed"
	LabelRun     = "codeagent.run"
	LabelVolumes = "codeagent.volumes"
	LabelTask    = "codeagent.task"
	LabelAttempt = "codeagent.attempt"
	// LabelRole says what a container is for: "attempt" (one task
	// attempt), "exec" (an acceptance command) or "preflight" (the model
	// check). Each carries the run's other labels too so a crash's
	// leftover is found.
	LabelRole = "codeagent.role"
)

const (
	// AgentDir holds what planagent brings into any image, at a path no
	// image uses: the binary, the CA bundle and the volumes.
	AgentDir    = "/codeagent"
	AgentBinary = AgentDir + "/bin/codingagent"
	VolumesDir  = AgentDir + "/volumes"
	// WorkspaceDir is the default workspace, for a run without
	// per-attempt copies.
	WorkspaceDir = VolumesDir + "/workspace"
)

const (
	// StopGrace outlasts the watcher's own 10s SIGTERM grace, so it can
	// still write "interrupted" reports before the engine kills it.
	StopGrace    = 15 // seconds
	StopDeadline = StopGrace*time.Second + 20*time.Second
	// LogsDrain is how long an ended container's log stream gets to
	// deliver what is left.
	LogsDrain = 2 * time.Second
)

const (
	// ExecOutputCap bounds what Exec keeps of a command's output; the end is
	// kept because failures are reported last.
	ExecOutputCap = 256 << 10
	// TimeoutExitCode is what Exec reports for a command it had to kill,
	// the same as GNU timeout(1).
	TimeoutExitCode = 124
	// ExecDefaultTimeout bounds a command given no timeout.
	ExecDefaultTimeout = 10 * time.Minute
	// EventsMirrorCap bounds what one attempt's live events copy writes on
	// the host; the whole file still comes back with the results.
	EventsMirrorCap = 16 << 20
)

// ContainerDir maps a host directory under the volumes to its path in a
// container: the default workspace or anything under attempts/; false for
// any other directory.
func ContainerDir(v volume.Layout, dir string) (string, bool) {
	if sameDir(dir, v.Workspace()) {
		return WorkspaceDir, true
	}
	if rel, err := filepath.Rel(v.Attempts(), dir); err == nil && rel != "." && filepath.IsLocal(rel) {
		return VolumesDir + "/attempts/" + filepath.ToSlash(rel), true
	}
	return "", false
}

func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}
