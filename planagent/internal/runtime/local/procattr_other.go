//go:build !linux

package local

import "syscall"

// ownGroup starts the watcher in a process group of its own. Without
// Linux's parent-death signal a killed planagent leaves it running until
// its own idle timeout.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
