// Package envfault tells a fault of the machine a run runs on (a full disk,
// a disk quota, a container engine that stopped answering) from a task's
// own failure. Such a fault is not the task's: failing the task for it
// would leave the run failed, its dependants skipped, for `resume
// --retry-failed` to undo. The run stops resumable instead, and a plain
// `planagent resume` redoes the task once the machine is fixed.
package envfault

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// ErrEngine marks an error of a container engine (or cluster) that stopped
// answering mid-run. The runtimes wrap their transport failures with it.
var ErrEngine = errors.New("the container engine stopped answering")

// texts are the C library's strerror texts of ENOSPC and EDQUOT, as git,
// the Docker engine and the coding agent print them: their errors reach
// planagent as text (a subprocess's stderr, an API error body, a report).
var texts = []string{"no space left on device", "disk quota exceeded"}

// Is says err is an environment fault: a full disk or quota anywhere in
// its chain (as an errno or as text), or an engine that stopped answering.
func Is(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrEngine) {
		return true
	}
	return InText(err.Error())
}

// InText says s names a full disk or quota: the error text of a report or
// of a failed command.
func InText(s string) bool {
	s = strings.ToLower(s)
	for _, t := range texts {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

// Disconnected says err is a broken connection to a server: refused, reset,
// cut short, or its socket gone. A runtime wraps such an error of its
// engine with ErrEngine; an API error the engine answered with is not one.
func Disconnected(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, syscall.ENOENT, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// Hint is what the operator does about err before `planagent resume`.
func Hint(err error) string {
	if errors.Is(err, ErrEngine) && !InText(err.Error()) {
		return "start the container engine again (check `docker info`)"
	}
	return "free disk space (or raise the quota) where the volumes dir, the workspace and the engine's data live"
}
