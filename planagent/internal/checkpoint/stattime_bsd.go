//go:build darwin || freebsd

package checkpoint

import "syscall"

// statTimes are a file's change and modification times.
func statTimes(st *syscall.Stat_t) (ctime, mtime syscall.Timespec) { return st.Ctimespec, st.Mtimespec }
