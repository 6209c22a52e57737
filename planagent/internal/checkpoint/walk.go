package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// A copy is walked on every squash and every recycle, in the order the
// directories list their entries: sorting each directory's names cost more
// than reading them (1.3 ms against 0.6 for a thousand files here).
//
// Git needs only search permission on a directory to reach a path in it,
// read permission to list it. A directory the agent made unreadable
// (chmod 0311) would hide from a walk what git still reads there: a
// repository whose config names a filter, which git then runs on the
// host. The copy is the host's (the agent writes it as the host's uid, or
// as root), so every directory is given back read, write and search
// permission for its owner before it is listed, without following a link;
// one that still cannot be listed (another uid's) is an UnreadableError,
// never passed over.

// walkFunc is called for an entry of a copy: its path, its slash-separated
// path relative to the copy and the entry; size is a regular file's size
// from lstat (copyWalk.sizes), else -1. It returns whether to descend
// into a directory.
type walkFunc func(p, rel string, d fs.DirEntry, size int64) (descend bool, err error)

// copyWalk is a walk of a copy. listed, when set, is called with each
// directory's entries (the top's with rel ""), once listed and before
// they are visited, and returns whether to visit them; sizes gets each
// regular file's size (an fstatat in the directory just listed, no read:
// a sparse file's holes are not expanded).
type copyWalk struct {
	visit  walkFunc
	listed func(p, rel string, entries []fs.DirEntry) (bool, error)
	sizes  bool
}

// walkCopy calls fn for every entry under dir (its top .git included, as
// ".git"); see copyWalk.
func walkCopy(dir string, fn walkFunc) error {
	return copyWalk{visit: fn}.walk(dir)
}

func (w copyWalk) walk(dir string) error {
	entries, sizes, err := w.list(dir, "")
	if err != nil {
		return err
	}
	return w.entries(dir, "", entries, sizes)
}

func (w copyWalk) entries(dir, rel string, entries []fs.DirEntry, sizes []int64) error {
	if w.listed != nil {
		if ok, err := w.listed(dir, rel, entries); err != nil || !ok {
			return err
		}
	}
	for i, d := range entries {
		p, r := dir+string(filepath.Separator)+d.Name(), d.Name()
		if rel != "" {
			r = rel + "/" + d.Name()
		}
		size := int64(-1)
		if sizes != nil {
			size = sizes[i]
		}
		descend, err := w.visit(p, r, d, size)
		if err != nil {
			return err
		}
		if !descend || !d.IsDir() {
			continue
		}
		sub, subSizes, err := w.list(p, r)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone meanwhile: nothing there for git either
		}
		if err != nil {
			return err
		}
		if err := w.entries(p, r, sub, subSizes); err != nil {
			return err
		}
	}
	return nil
}

// list reads the directory p (rel in the copy) unsorted, with its regular
// files' sizes when the walk wants them.
func (w copyWalk) list(p, rel string) ([]fs.DirEntry, []int64, error) {
	f, err := openDir(p, rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("list %s of the copy: %w", shown(rel), err)
	}
	if !w.sizes {
		return entries, nil, nil
	}
	sizes := make([]int64, len(entries))
	fd := int(f.Fd())
	for i, e := range entries {
		sizes[i] = -1
		if !e.Type().IsRegular() {
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
			// gone meanwhile
		case err != nil:
			return nil, nil, &UnreadableError{Path: join(rel, e.Name()), Err: err}
		case st.Mode&unix.S_IFMT == unix.S_IFREG:
			sizes[i] = st.Size
		}
	}
	return entries, sizes, nil
}

// openDir opens the directory p of a copy (rel in it) for listing, without
// following a link, once its owner may read, write and search it: a
// directory the agent took its permissions from is given them back. One
// that stays unreadable, not being the host's, is an UnreadableError. A
// directory gone is fs.ErrNotExist.
func openDir(p, rel string) (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW
	f, err := os.OpenFile(p, flags, 0)
	if errors.Is(err, fs.ErrPermission) {
		// No read permission: given back through a descriptor that does
		// not need it.
		if cerr := chmodDir(p); cerr != nil {
			return nil, &UnreadableError{Path: shown(rel), Err: errors.Join(err, cerr)}
		}
		f, err = os.OpenFile(p, flags, 0)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, fs.ErrPermission):
		return nil, &UnreadableError{Path: shown(rel), Err: err}
	case err != nil:
		// A link or a file now where a directory was listed: the copy
		// changed while it was read.
		return nil, fmt.Errorf("open %s of the copy: %w", shown(rel), err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		// Readable without the owner's bits (another uid's directory
		// that others may read), or not searchable or writable yet.
		mode := fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky) | 0o700
		if cerr := f.Chmod(mode); cerr != nil {
			if aerr := unix.Faccessat(int(f.Fd()), ".", unix.R_OK|unix.X_OK, 0); aerr != nil {
				f.Close()
				return nil, &UnreadableError{Path: shown(rel), Err: errors.Join(cerr, aerr)}
			}
		}
	}
	return f, nil
}

// readDirFixed lists the directory p of a copy (rel in it) as walkCopy
// does a directory of its own: its owner's permissions given back, an
// UnreadableError when it still cannot be read.
func readDirFixed(p, rel string) ([]fs.DirEntry, error) {
	entries, _, err := copyWalk{}.list(p, rel)
	return entries, err
}

// UnreadableError is a directory of a task's copy that planagent cannot
// read even once it has given its owner read, write and search
// permission back: it is another user's (the agent's, when its container
// runs as another uid). Git needs only search permission to reach a path
// in a directory, so what planagent cannot check there could still be
// read on the host: the attempt is refused.
type UnreadableError struct {
	Path string // relative to the copy ("." for the copy itself)
	Err  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("the task's copy has a directory planagent (uid %d) cannot read: %s (%v); a task must leave its directories readable by planagent's user (run the agent as that user, and do not take a directory's permissions away with chmod)",
		os.Geteuid(), e.Path, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// shown is a path relative to the copy as errors name it.
func shown(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}
