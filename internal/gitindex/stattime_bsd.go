//go:build darwin || freebsd

package gitindex

import "syscall"

// StatTimes are a file's change and modification times.
func StatTimes(st *syscall.Stat_t) (ctime, mtime syscall.Timespec) { return st.Ctimespec, st.Mtimespec }
