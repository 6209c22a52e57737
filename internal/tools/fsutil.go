package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// binarySniffLen is how much of a file is checked for NUL bytes, as git does.
const binarySniffLen = 8 << 10

// IsBinary reports whether data (the start of a file) looks binary: a NUL
// byte within the first 8 KiB.
func IsBinary(data []byte) bool {
	if len(data) > binarySniffLen {
		data = data[:binarySniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// fileIsBinary sniffs the start of the file at path.
func fileIsBinary(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, binarySniffLen)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return IsBinary(buf[:n]), nil
}

// writeFileAtomic replaces path with data through a temp file in the same
// directory and a rename, so readers (and the planagent watching the tree)
// never see half a file. An existing file keeps its mode; a new one gets
// 0644. Missing parent directories are created.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp file in %s: %w", dir, err)
	}
	tmpName := tmp.Name()
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmpName, path, err)
	}
	committed = true
	return nil
}

// describeFileError turns an os error about a workspace file into a message
// for the model, naming the file by its workspace path.
func describeFileError(w *Workspace, abs string, err error) string {
	rel := w.Rel(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("file %q does not exist; use glob or list_dir to find the right path", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied on %q", rel)
	default:
		return fmt.Sprintf("%s: %v", rel, err)
	}
}
