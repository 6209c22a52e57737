// Package runlock makes sure one planagent process at a time drives a run:
// two resumes of the same run would both dispatch its tasks and overwrite
// each other's state.json.
package runlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrHeld means a live process holds the lock.
var ErrHeld = errors.New("the run is being driven by another planagent")

// Lock is a held run lock; Release it when the run stops.
type Lock struct{ f *os.File }

// Acquire takes the lock of the run whose directory is dir (created when
// missing). The lock is an flock(2) on dir/lock: the kernel drops it when
// its holder exits however it dies, so a crashed holder's lock is taken
// over with nothing to clean up. The holder's pid is written in the file
// for the message of the process that is refused.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run lock: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("%w (%s holds %s): wait for it to end or stop it (Ctrl-C, or kill that pid) before resuming", ErrHeld, holder, path)
		}
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock. The file stays: removing it would let a process
// that opened it just before lock an unlinked inode while a third creates
// a new file.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// Free reports whether no process holds the lock of the run whose
// directory is dir: the run is not being driven, so whatever it left
// (containers, claims) is nobody's. A dir or lock file that does not exist
// is free, and neither is created. The probe takes the lock for an instant
// (flock has no test-only call): an Acquire in that instant is refused as
// held, the same answer it gets while any process drives the run.
func Free(dir string) (bool, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("run lock %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("run lock %s: %w", path, err)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return true, nil
}
