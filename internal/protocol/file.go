package protocol

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ReadCommand reads and parses a command file.
func ReadCommand(path string) (*Command, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("read command: %w", err)
	}
	return ParseCommand(path, data)
}

// WriteCommand writes a command file atomically. The file name must be
// <id>.md, so the reader's name check cannot fail.
func WriteCommand(path string, c *Command) error {
	data, err := c.marshal(path)
	if err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	return WriteFileAtomic(path, data, 0o644)
}

// ReadReport reads and parses a report file.
func ReadReport(path string) (*Report, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	return ParseReport(path, data)
}

// WriteReport writes a report file atomically; the name must be <id>.md.
func WriteReport(path string, r *Report) error {
	data, err := r.marshal(path)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return WriteFileAtomic(path, data, 0o644)
}

// readLimited reads at most one byte more than MaxFileSize, enough for the
// parser to refuse an oversized file without reading all of it.
// Anything but a regular file (a FIFO the agent made, a symbolic link) is
// refused without blocking.
func readLimited(path string) ([]byte, error) {
	return ReadRegular(path, MaxFileSize+1)
}

// WriteFileAtomic replaces path with data so that readers see either the old
// file or the complete new one, never a part: the data goes to a temporary
// file ".<base>.tmp-<random>" in the same directory (same filesystem, so the
// rename is atomic), is fsynced, and is renamed over path; the directory is
// then fsynced so the rename survives a crash. perm is applied as given,
// without the umask.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create temporary file: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: set mode %v: %w", path, perm, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename temporary file into place: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	// Some filesystems (certain FUSE and network mounts) cannot fsync a
	// directory; the rename itself has still happened, so that is not a
	// failure of the write.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
