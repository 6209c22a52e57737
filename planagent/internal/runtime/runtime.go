// Package runtime runs the codingagent that carries out each task attempt
// in the attempt's own workspace copy: a container of its own per attempt
// through the Docker engine (docker*.go) or a Job per attempt on a cluster
// (kube*.go), or a compose watcher found alive that serves each command in
// the copy it names; and it runs acceptance commands where the agent works.
// The orchestrator drives each through its own Runtime interface
// (orchestrator.Runtime); the local runtime is package runtime/local.
package runtime

import (
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// ExecResult is an acceptance command's output and exit code (attempt.ExecResult).
type ExecResult = attempt.ExecResult

// Alive reports whether some heartbeat in watchersDir (<watcher-id>.json)
// was written within maxAge, i.e. a live watcher (compose, another
// terminal, an attempt's container or pod) serves the volumes. Freshness is
// protocol.Heartbeat's, judged on the time the heartbeat says it was
// written, as codingagent's health check judges it.
func Alive(watchersDir string, maxAge time.Duration) bool {
	return freshHeartbeat(watchersDir, time.Now().Add(-maxAge))
}

// freshHeartbeat reports whether some heartbeat in watchersDir was written
// at or after since. A missing or unreadable dir has no heartbeat: the
// caller decides whether that is an error.
func freshHeartbeat(watchersDir string, since time.Time) bool {
	h, ok := protocol.LatestHeartbeat(watchersDir)
	return ok && h.BeatSince(since)
}
