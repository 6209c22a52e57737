package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codeagent/codeagent/internal/protocol"
)

// errEscapes: a path under an attempt's own volumes that leads out of them
// (a link, "..") or through something that is not a directory.
var errEscapes = errors.New("not a plain path under the attempt's volumes")

// openBeneath opens the regular file rel under root for reading, following
// no link on the way (every component is opened with O_NOFOLLOW from its
// parent's descriptor) and without blocking on a FIFO: the tree is one a
// container wrote, which may have swapped any directory for a link.
func openBeneath(root, rel string) (*os.File, error) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%s: %w", rel, errEscapes)
		}
	}
	dir, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	for i, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(dir, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		_ = unix.Close(dir)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return nil, fmt.Errorf("%s: %s: %w", rel, strings.Join(parts[:i+1], "/"), errEscapes)
			}
			return nil, &os.PathError{Op: "open", Path: filepath.Join(root, rel), Err: err}
		}
		dir = next
	}
	fd, err := unix.Openat(dir, parts[len(parts)-1], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	_ = unix.Close(dir)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s: a link: %w", rel, errEscapes)
		}
		return nil, &os.PathError{Op: "open", Path: filepath.Join(root, rel), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(root, rel))
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", rel, protocol.ErrNotRegular)
	}
	return f, nil
}

// errTooLarge: a file an attempt wrote is larger than planagent takes.
var errTooLarge = errors.New("larger than the limit")

// readBeneath reads the regular file rel under root (openBeneath), refusing
// one larger than limit without reading it.
func readBeneath(root, rel string, limit int64) ([]byte, error) {
	f, err := openBeneath(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes: %w of %d", rel, fi.Size(), errTooLarge, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w of %d", rel, errTooLarge, limit)
	}
	return data, nil
}
