package protocol

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is returned for a path in the volumes that is not a regular
// file: a FIFO, a socket, a device or a symbolic link. The volumes are
// writable by the agent, so such a file is hostile or a mistake: opening a
// FIFO blocks until a writer appears (and signals do not interrupt that), and
// following a symbolic link would read a file outside the volumes.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path with flag (os.O_RDONLY, or a write mode with
// os.O_CREATE) only if it is a regular file, without following a symbolic
// link and without blocking on a FIFO. The returned file reads and writes as
// usual.
func OpenRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := openNoBlock(path, flag, perm)
	if err != nil {
		if kind, ok := notRegular(path, err); ok {
			return nil, fmt.Errorf("open %s: %w (%s: refused)", path, ErrNotRegular, kind)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("open %s: %w (%s: refused)", path, ErrNotRegular, KindOf(fi.Mode()))
	}
	return f, nil
}

// ReadRegular reads the regular file at path, at most limit bytes (limit <= 0:
// no limit). Anything else (see ErrNotRegular) is refused without blocking.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit)
	}
	return io.ReadAll(r)
}

// notRegular explains an open that failed because of what path is: a
// symbolic link under O_NOFOLLOW (ELOOP), a socket or a FIFO without a
// reader opened for writing (ENXIO).
func notRegular(path string, err error) (string, bool) {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return "", false
	}
	fi, lerr := os.Lstat(path)
	if lerr != nil || fi.Mode().IsRegular() {
		return "", false
	}
	return KindOf(fi.Mode()), true
}

// KindOf names what a file of mode m is ("a FIFO", "a symbolic link"),
// for the messages that refuse it.
func KindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	default:
		return "mode " + m.String()
	}
}
