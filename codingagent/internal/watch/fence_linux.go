package watch

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// fenceDeadline bounds the wait for the container's other processes to be
// gone; a fork loop that outlasts it keeps the report from being written.
const fenceDeadline = 10 * time.Second

// fenceContainer ends every other process of the container before the
// report is written, when codingagent is the container's first process
// (`watch --task` as its entrypoint): nothing the agent left running (a
// background loop of a shell command) can then change the report or the
// copy after it, and planagent takes the report only from a container that
// exited normally. It returns false when some process would not go.
func fenceContainer(log *slog.Logger) bool {
	if os.Getpid() != 1 {
		return true // a watcher on the host or in compose: a trusted mode
	}
	deadline := time.Now().Add(fenceDeadline)
	for {
		// As the namespace's init, kill(-1) reaches every other process in
		// it; orphans come to init, so once no child is left, none is.
		_ = syscall.Kill(-1, syscall.SIGKILL)
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.ECHILD):
			return true
		case err != nil && !errors.Is(err, syscall.EINTR):
			log.Error("fence: waiting for the container's processes", "err", err)
			return false
		case pid > 0:
			continue
		}
		if time.Now().After(deadline) {
			log.Error("fence: processes of the agent's are still running; no report is written")
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
