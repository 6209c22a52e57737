// Package runtime runs the codingagent that carries out each task attempt
// in the attempt's own workspace copy: a container of its own per attempt
// through the Docker engine (docker*.go), or a shared watcher (a local
// subprocess, or a compose watcher found alive) that serves each command in
// the copy it names; and it runs acceptance commands where the agent works.
package runtime

import (
	"context"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

type Runtime interface {
	Name() string
	// Start makes sure a codingagent watcher serves the volumes and returns once its heartbeat is seen.
	Start(ctx context.Context) error
	// Launch starts what carries out an attempt whose command file is
	// written; where a shared watcher serves every task it does nothing.
	Launch(ctx context.Context, a Attempt) error
	// Abandon stops what still works on attempt n of a task, which the
	// orchestrator gave up on (timed out); the task's other attempts run
	// on. Nothing where one watcher serves every task.
	Abandon(ctx context.Context, taskID string, n int) error
	// Exited delivers the unexpected death (exit code, OOM) of an attempt's
	// agent or of the watcher this runtime started; nil channel when it
	// serves through a watcher it did not start.
	Exited() <-chan Exit
	// Exec runs an acceptance command (sh -c) with dir, a host path (the
	// workspace or a directory under the volumes), as working directory, as
	// the agent would see it.
	Exec(ctx context.Context, dir, command string, timeout time.Duration) (ExecResult, error)
	// Stop stops and removes what Start created; idempotent; must work with a cancelled ctx.
	Stop(ctx context.Context) error
}

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
