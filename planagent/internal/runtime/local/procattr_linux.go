package local

import "syscall"

// ownGroup starts the watcher in a process group of its own, and stops it
// (SIGTERM) if planagent dies first.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
