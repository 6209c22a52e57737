package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/codeagent/codeagent/internal/gitindex"
)

// A copy's git directory is emptied in place rather than deleted and made
// again: on a virtual disk a directory removed costs about a millisecond
// and one made a third of that, while a file rewritten costs a tenth of
// one created. What the host keeps are its own directories (objects,
// objects/pack, refs) and the names of the files it writes next (HEAD,
// config, index, packed-refs, the packs), each only when it is what it
// should be: a real directory, or a regular file with a single link. Every
// other entry, whatever the agent made it, is removed; a kept file is then
// truncated and written by the host, never read.

// copyGitDirs are the directories of a copy's git directory, and what each
// may keep: nil keeps no entry, a file pattern keeps regular files so named.
var copyGitDirs = map[string]func(name string, dir bool) bool{
	".": func(name string, dir bool) bool {
		switch name {
		case "objects", "refs":
			return dir
		case "HEAD", "config", "index", "packed-refs":
			return !dir
		}
		return false
	},
	"objects": func(name string, dir bool) bool { return dir && name == "pack" },
	"objects/pack": func(name string, dir bool) bool {
		return !dir && strings.HasPrefix(name, "pack-") // .pack, .idx, .rev: what the cache has
	},
	"refs": func(string, bool) bool { return false },
}

// tidyGitDir empties the git directory gd of a copy in place, as above. It
// reports false when gd was not there (or was not a directory, now
// removed): then it must be made anew.
func tidyGitDir(gd string) (bool, error) {
	fi, err := os.Lstat(gd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, os.Remove(gd)
	}
	for _, rel := range []string{".", "objects", "objects/pack", "refs"} {
		dir := filepath.Join(gd, filepath.FromSlash(rel))
		if rel != "." {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return false, err
			}
		}
		// The agent may have taken its permissions: the host needs them.
		if err := os.Chmod(dir, 0o755); err != nil {
			return false, err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return false, err
		}
		keep := copyGitDirs[rel]
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if keep(e.Name(), e.IsDir()) && (e.IsDir() || singleFile(p)) {
				continue
			}
			if err := removeAll(p); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// singleFile reports whether p is a regular file with one link: one that
// can be truncated and rewritten without writing through to another name.
func singleFile(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}

// rewrite opens p, in a copy's git directory, to be written from its
// start: in place when it is a single regular file, else made anew (what
// was there removed). The open follows no link and does not block.
func rewrite(p string) (*os.File, error) {
	if singleFile(p) {
		f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err == nil {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && f.Truncate(0) == nil {
				return f, nil
			}
			f.Close()
		}
	}
	if err := removeAll(p); err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
}

// writeCopyFile writes data to p in a copy's git directory (rewrite).
func writeCopyFile(p string, data []byte) error {
	f, err := rewrite(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyIntoCopy copies the regular file src (the host's) to p in a copy's
// git directory (rewrite), keeping src's modification time (copyFile).
func copyIntoCopy(p, src string) error { return copyFile(p, src, rewrite) }

// A pack the host wrote into a copy is not written again while it is as
// the host left it: the same inode, size, modification and change time
// (the change time, which no write, rename or utimes leaves alone, cannot
// be set back). That is the trust git's index gives a file's stat data,
// and the copy's work tree already gets. A stamp is only trusted when its
// change time lies clearly before the copy was handed out (sealed): the
// kernel's file times are coarser than the clock, so a write just after
// could otherwise leave the same change time.

// stamp is a file's stat data.
type stamp struct{ ino, size, mtime, ctime int64 }

// stampMargin is the least time between a stamped file's change time and
// the copy's seal: more than the file times' granularity (a jiffy, 10 ms
// at HZ=100).
const stampMargin = 20 * time.Millisecond

func stampOf(p string) (stamp, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return stamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink != 1 {
		return stamp{}, false
	}
	ctime, mtime := gitindex.StatTimes(st)
	return stamp{ino: int64(st.Ino), size: st.Size, mtime: mtime.Nano(), ctime: ctime.Nano()}, true //nolint:unconvert,gosec // uint64 on some platforms
}

// sameBytes reports whether the copy's file p is a single regular file
// holding exactly the bytes of the host's file src.
func sameBytes(p, src string) bool {
	f, err := openRegular(src)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && sameContent(p, f, fi.Size())
}

// sameData is sameBytes against bytes in memory.
func sameData(p string, data []byte) bool {
	return sameContent(p, bytes.NewReader(data), int64(len(data)))
}

// sameContent reports whether the copy's file p is a single regular file
// of size bytes that read as want. The open follows no link and does not
// block.
func sameContent(p string, want io.Reader, size int64) bool {
	if !singleFile(p) {
		return false
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	got, exp := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n, errA := io.ReadFull(f, got)
		m, errB := io.ReadFull(want, exp)
		if n != m || !bytes.Equal(got[:n], exp[:m]) {
			return false
		}
		if errA != nil || errB != nil {
			return ended(errA) && ended(errB)
		}
	}
}

// ended reports whether a full read stopped at the end of its file.
func ended(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// stamps are the packs the host wrote into a copy, and when it sealed it.
type stamps struct {
	seal  int64
	files map[string]stamp
}

// unchanged reports whether the copy's file p, named name, is still what
// the host wrote.
func (s stamps) unchanged(name, p string) bool {
	want, ok := s.files[name]
	if !ok || want.ctime >= s.seal-int64(stampMargin) {
		return false
	}
	got, ok := stampOf(p)
	return ok && got == want
}

func readStamps(p string) stamps {
	s := stamps{files: map[string]stamp{}}
	data, err := os.ReadFile(p)
	if err != nil {
		return s
	}
	lines := strings.Split(string(data), "\n")
	if _, err := fmt.Sscan(lines[0], &s.seal); err != nil {
		return stamps{files: map[string]stamp{}}
	}
	for _, l := range lines[1:] {
		var name string
		var st stamp
		if n, _ := fmt.Sscan(l, &name, &st.ino, &st.size, &st.mtime, &st.ctime); n == 5 {
			s.files[name] = st
		}
	}
	return s
}

func writeStamps(p string, s stamps) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", s.seal)
	for name, st := range s.files {
		fmt.Fprintf(&b, "%s %d %d %d %d\n", name, st.ino, st.size, st.mtime, st.ctime)
	}
	return os.WriteFile(p, []byte(b.String()), 0o600)
}
