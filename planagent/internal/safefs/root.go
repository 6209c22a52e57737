//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codeagent/codeagent/internal/protocol"
)

// ErrOutside is returned for a name that does not lie beneath the root: one
// with a ".." component, or an absolute path not under the root's path.
var ErrOutside = errors.New("not beneath the root")

// Root is an open directory beneath which files are handled without
// following links. It is safe for concurrent use; Close it when done.
type Root struct {
	dir  string // the root's path, absolute and clean: names and messages are built on it
	fd   int
	log  *slog.Logger
	fast fastPath
}

// OpenRoot opens dir, which must exist, as a Root. logger is told of each
// link or non-directory replaced by a directory (nil: nobody is).
func OpenRoot(dir string, logger *slog.Logger) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open the volumes dir: %w (create it, or name another with --volumes)", &fs.PathError{Op: "open", Path: abs, Err: err})
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Root{dir: abs, fd: fd, log: logger}, nil
}

// Close releases the root's directory.
func (r *Root) Close() error {
	if err := unix.Close(r.fd); err != nil {
		return &fs.PathError{Op: "close", Path: r.dir, Err: err}
	}
	return nil
}

// The name taken by every method is relative to the root, or an absolute
// path lexically under it (as volume.Layout gives them).

// MkdirAll makes the directory name and its parents, replacing a link or
// other non-directory on the way by a directory.
func (r *Root) MkdirAll(name string) error {
	comps, err := r.split(name)
	if err != nil {
		return err
	}
	fd, err := r.openDir(comps, true)
	if err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	_ = unix.Close(fd)
	return nil
}

// WriteFileAtomic replaces the file name by data: readers see the old file
// or the whole new one. The data goes to a temporary ".<base>.tmp-*" in the
// same directory, fsynced, is renamed over name (a link there is replaced,
// not followed) and the directory is fsynced. Missing parents are made as
// MkdirAll does. perm is applied without the umask.
func (r *Root) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	return r.writeFile(name, data, perm, true)
}

// ReplaceFile is WriteFileAtomic without the fsyncs: atomic, but a crash may
// lose it. For files derived from state kept durably elsewhere, rewritten
// often enough that two fsyncs a write would be a large share of their cost.
func (r *Root) ReplaceFile(name string, data []byte, perm fs.FileMode) error {
	return r.writeFile(name, data, perm, false)
}

func (r *Root) writeFile(name string, data []byte, perm fs.FileMode, durable bool) error {
	comps, err := r.splitFile(name)
	if err != nil {
		return err
	}
	full, base := r.full(comps), comps[len(comps)-1]
	dir, err := r.openDir(comps[:len(comps)-1], true)
	if err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	defer unix.Close(dir)
	tmp, f, err := createTemp(dir, "."+base+".tmp-", filepath.Dir(full))
	if err != nil {
		return fmt.Errorf("write %s: create temporary file: %w", full, err)
	}
	_, werr := f.Write(data)
	if err := f.Chmod(perm); werr == nil {
		werr = err
	}
	if durable && werr == nil {
		werr = f.Sync()
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = renameat(dir, tmp, dir, base)
	}
	if werr != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return fmt.Errorf("write %s: %w", full, werr)
	}
	if durable {
		// Some filesystems (certain FUSE and network mounts) cannot fsync a
		// directory; the rename has still happened.
		if err := unix.Fsync(dir); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("write %s: sync directory: %w", full, err)
		}
	}
	return nil
}

// Rename moves oldName to newName, making newName's missing parents. Neither
// is followed if it is a link (the link itself moves, or is replaced); a
// link among oldName's parents makes it not exist (fs.ErrNotExist).
func (r *Root) Rename(oldName, newName string) error {
	oc, err := r.splitFile(oldName)
	if err != nil {
		return err
	}
	nc, err := r.splitFile(newName)
	if err != nil {
		return err
	}
	od, err := r.openDir(oc[:len(oc)-1], false)
	if err != nil {
		return fmt.Errorf("move %s: %w", r.full(oc), err)
	}
	defer unix.Close(od)
	nd, err := r.openDir(nc[:len(nc)-1], true)
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", r.full(oc), r.full(nc), err)
	}
	defer unix.Close(nd)
	if err := renameat(od, oc[len(oc)-1], nd, nc[len(nc)-1]); err != nil {
		return &os.LinkError{Op: "rename", Old: r.full(oc), New: r.full(nc), Err: err}
	}
	return nil
}

// RemoveAll removes name and, if it is a directory, everything in it; a link
// is removed, never followed. A name that does not exist (or lies under a
// link) is not an error.
func (r *Root) RemoveAll(name string) error {
	comps, err := r.splitFile(name)
	if err != nil {
		return err
	}
	dir, err := r.openDir(comps[:len(comps)-1], false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", r.full(comps), err)
	}
	defer unix.Close(dir)
	if err := r.removeEntry(dir, comps[len(comps)-1], r.full(comps)); err != nil {
		return fmt.Errorf("remove %s: %w", r.full(comps), err)
	}
	return nil
}

// Open opens the regular file name for reading: not a link (not followed),
// not a FIFO (never waited on), not a device (protocol.ErrNotRegular).
func (r *Root) Open(name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens the regular file name with flag (os.O_RDONLY, or a write
// mode, with os.O_CREATE to create it and its parents as MkdirAll does).
// Anything but a regular file is refused without blocking
// (protocol.ErrNotRegular).
func (r *Root) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	comps, err := r.splitFile(name)
	if err != nil {
		return nil, err
	}
	full, base := r.full(comps), comps[len(comps)-1]
	dir, err := r.openDir(comps[:len(comps)-1], flag&os.O_CREATE != 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", full, err)
	}
	defer unix.Close(dir)
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dir, base, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		if kind, ok := notRegularAt(dir, base); ok {
			return nil, fmt.Errorf("open %s: %w (%s: refused)", full, protocol.ErrNotRegular, kind)
		}
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: full, Err: err}
	}
	if m := fileMode(&st); !m.IsRegular() {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w (%s: refused)", full, protocol.ErrNotRegular, protocol.KindOf(m))
	}
	// O_NONBLOCK was for the open (a FIFO's other end); the file reads and
	// writes as usual from here.
	_ = unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), full), nil
}

// Mode is the mode of name's own entry: a link's, not its target's. A link
// among its parents makes it not exist (fs.ErrNotExist).
func (r *Root) Mode(name string) (fs.FileMode, error) {
	comps, err := r.split(name)
	if err != nil {
		return 0, err
	}
	if len(comps) == 0 {
		var st unix.Stat_t
		if err := unix.Fstat(r.fd, &st); err != nil {
			return 0, &fs.PathError{Op: "stat", Path: r.dir, Err: err}
		}
		return fileMode(&st), nil
	}
	dir, err := r.openDir(comps[:len(comps)-1], false)
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", r.full(comps), err)
	}
	defer unix.Close(dir)
	st, err := lstatAt(dir, comps[len(comps)-1])
	if err != nil {
		return 0, &fs.PathError{Op: "lstat", Path: r.full(comps), Err: err}
	}
	return fileMode(&st), nil
}

// split is name's components beneath the root; none is "", "." or "..".
func (r *Root) split(name string) ([]string, error) {
	raw := filepath.ToSlash(name)
	for c := range strings.SplitSeq(raw, "/") {
		if c == ".." {
			return nil, fmt.Errorf("%s: %w (\"..\" is refused)", name, ErrOutside)
		}
	}
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(r.dir, name)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s: %w %s", name, ErrOutside, r.dir)
		}
		raw = filepath.ToSlash(rel)
	}
	var comps []string
	for c := range strings.SplitSeq(raw, "/") {
		if c != "" && c != "." {
			comps = append(comps, c)
		}
	}
	return comps, nil
}

// splitFile is split for a name that must not be the root itself.
func (r *Root) splitFile(name string) ([]string, error) {
	comps, err := r.split(name)
	if err == nil && len(comps) == 0 {
		err = fmt.Errorf("%s: names the root %s itself, not a file beneath it", name, r.dir)
	}
	return comps, err
}

// full is the path of comps, for messages.
func (r *Root) full(comps []string) string {
	return filepath.Join(append([]string{r.dir}, comps...)...)
}
