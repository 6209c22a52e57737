//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/codeagent/codeagent/internal/protocol"
)

// dirFlags open a directory and nothing else: not a link (O_NOFOLLOW), and
// never wait on a FIFO planted where a directory belongs (O_NONBLOCK; the
// O_DIRECTORY check comes first on Linux, the flag makes sure elsewhere).
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// attempts bounds how often one component is made again after something
// else changed it under us (a writer replanting a link as fast as it is
// removed): past that, the error names it rather than looping for ever.
const attempts = 3

// openDir opens the directory comps names beneath the root (the root itself
// for none). With create, missing directories are made and a link or other
// non-directory on the way is removed and replaced by a directory; without,
// either makes the directory not exist (fs.ErrNotExist).
func (r *Root) openDir(comps []string, create bool) (int, error) {
	if fd, ok := r.fast.open(r.fd, comps); ok {
		return fd, nil
	}
	// The walk is the authority: the fast path fails on anything it would
	// have to repair, and on kernels without openat2.
	dir := r.fd
	for i := range comps {
		fd, err := r.step(dir, comps[:i+1], create)
		if dir != r.fd {
			_ = unix.Close(dir)
		}
		if err != nil {
			return -1, err
		}
		dir = fd
	}
	if dir == r.fd {
		return openat(r.fd, ".", dirFlags, 0)
	}
	return dir, nil
}

// step opens the last of comps as a directory in parent, made or repaired
// as openDir says.
func (r *Root) step(parent int, comps []string, create bool) (int, error) {
	name := comps[len(comps)-1]
	for range attempts {
		fd, err := openat(parent, name, dirFlags, 0)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOENT) && create:
			if err := unix.Mkdirat(parent, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return -1, &fs.PathError{Op: "mkdir", Path: r.full(comps), Err: err}
			}
		case notDir(err) && create:
			if err := r.replace(parent, comps); err != nil {
				return -1, err
			}
		case notDir(err):
			return -1, fmt.Errorf("%s is %s, not a directory (not followed): %w", r.full(comps), describeAt(parent, name), fs.ErrNotExist)
		default:
			return -1, &fs.PathError{Op: "open", Path: r.full(comps), Err: err}
		}
	}
	return -1, fmt.Errorf("%s: still not a directory after %d attempts to make one: something keeps replacing it; stop whatever writes there", r.full(comps), attempts)
}

// notDir reports whether an open with dirFlags failed on what the entry is:
// a link under O_NOFOLLOW (ELOOP; EMLINK on FreeBSD) or something that is
// not a directory (ENOTDIR).
func notDir(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENOTDIR)
}

// replace removes the non-directory comps names in parent (a link is
// removed, not followed) and makes a directory there.
func (r *Root) replace(parent int, comps []string) error {
	name, full := comps[len(comps)-1], r.full(comps)
	was := describeAt(parent, name)
	if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		if st, serr := lstatAt(parent, name); serr == nil && fileMode(&st).IsDir() {
			return nil // a directory now (EISDIR; EPERM on macOS): the next open takes it
		}
		return fmt.Errorf("%s is %s where a directory belongs, and cannot be removed: %w (remove it by hand)", full, was,
			&fs.PathError{Op: "unlink", Path: full, Err: err})
	}
	r.log.Warn("removed what stood where a directory of the volumes belongs, without following it, and made a directory there",
		"path", full, "was", was)
	if err := unix.Mkdirat(parent, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return &fs.PathError{Op: "mkdir", Path: full, Err: err}
	}
	return nil
}

// describeAt says what name in dir is, for messages: "a symbolic link to
// /home/you", "a FIFO".
func describeAt(dir int, name string) string {
	st, err := lstatAt(dir, name)
	if err != nil {
		return "gone"
	}
	m := fileMode(&st)
	if m&fs.ModeSymlink == 0 {
		return protocol.KindOf(m)
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return protocol.KindOf(m)
	}
	return "a symbolic link to " + strconv.Quote(string(buf[:n]))
}

// notRegularAt explains an open of name in dir that failed because of what
// name is (a link under O_NOFOLLOW, a FIFO without a reader, a socket).
func notRegularAt(dir int, name string) (string, bool) {
	st, err := lstatAt(dir, name)
	if err != nil {
		return "", false
	}
	if m := fileMode(&st); !m.IsRegular() {
		return protocol.KindOf(m), true
	}
	return "", false
}

// removeEntry removes name in dir, and everything in it if it is a
// directory: each level is opened from its parent's descriptor without
// following links, and a link is unlinked like a file.
func (r *Root) removeEntry(dir int, name, full string) error {
	for range attempts {
		fd, err := openat(dir, name, dirFlags, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil
		case notDir(err):
			err = unix.Unlinkat(dir, name, 0)
			if err == nil || errors.Is(err, unix.ENOENT) {
				return nil
			}
			if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
				continue // a directory now: open it again
			}
			return &fs.PathError{Op: "unlink", Path: full, Err: err}
		case err != nil:
			return &fs.PathError{Op: "open", Path: full, Err: err}
		}
		d := os.NewFile(uintptr(fd), full)
		err = r.removeContents(d, fd, full)
		_ = d.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return &fs.PathError{Op: "rmdir", Path: full, Err: err}
		}
		// Something was added meanwhile: empty it again.
	}
	return fmt.Errorf("%s: not removed after %d attempts: something keeps changing it; stop whatever writes there and remove it by hand", full, attempts)
}

// removeContents removes what the directory d (descriptor fd) holds.
func (r *Root) removeContents(d *os.File, fd int, full string) error {
	for {
		names, err := d.Readdirnames(1024)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", full, err)
		}
		for _, n := range names {
			if err := r.removeEntry(fd, n, filepath.Join(full, n)); err != nil {
				return err
			}
		}
	}
}

// createTemp makes a new file named prefix+random in dir (exclusive, never
// through a link), returning its name and the open file.
func createTemp(dir int, prefix, dirPath string) (string, *os.File, error) {
	for range 100 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		fd, err := openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", nil, &fs.PathError{Op: "create", Path: filepath.Join(dirPath, name), Err: err}
		}
		return name, os.NewFile(uintptr(fd), filepath.Join(dirPath, name)), nil
	}
	return "", nil, &fs.PathError{Op: "create", Path: filepath.Join(dirPath, prefix+"*"), Err: fs.ErrExist}
}

func openat(dir int, name string, flags int, perm uint32) (fd int, err error) {
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dir, name, flags, perm)
		return err
	})
	return fd, err
}

func renameat(olddir int, oldName string, newdir int, newName string) error {
	return ignoringEINTR(func() error { return unix.Renameat(olddir, oldName, newdir, newName) })
}

func lstatAt(dir int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, err
}

// ignoringEINTR retries fn while a signal interrupts it, as package os does
// (Go's runtime signals can interrupt an open on some filesystems).
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// fileMode is st's mode as package fs spells it.
func fileMode(st *unix.Stat_t) fs.FileMode {
	mode := uint32(st.Mode)
	m := fs.FileMode(mode & 0o777)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
