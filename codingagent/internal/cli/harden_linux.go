package cli

import "golang.org/x/sys/unix"

// hardenProcess makes this process non-dumpable, which also makes
// /proc/<pid>/environ readable by root only: the shell commands the model
// runs (as the same user) cannot read the API key from our environment.
func hardenProcess() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
