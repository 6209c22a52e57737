package cmdutil

import "golang.org/x/sys/unix"

// Harden makes this process non-dumpable, which also makes
// /proc/<pid>/environ and /proc/<pid>/mem readable by root only: commands
// the model runs as the same user (the local runtime) cannot read the API
// key from either program's environment or memory.
func Harden() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
