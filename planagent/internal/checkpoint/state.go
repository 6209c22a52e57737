package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// stateDir is where the host keeps what it knows of the copy at dir.
func (r *Repo) stateDir(dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return filepath.Join(r.private, hex.EncodeToString(sum[:10]))
}

// saveState keeps the copy's index, just made by the host, and the copy's
// path (for DrainPool).
func (r *Repo) saveState(dir string) error {
	state := r.stateDir(dir)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	if err := copyRegular(filepath.Join(state, "index"), filepath.Join(dir, ".git", "index")); err != nil {
		return fmt.Errorf("keep the copy's index: %w", err)
	}
	return os.WriteFile(filepath.Join(state, "path"), []byte(dir), 0o600)
}

// moveState follows a copy that moved from one path to another.
func (r *Repo) moveState(from, to string) error {
	_ = os.RemoveAll(r.stateDir(to))
	if err := os.Rename(r.stateDir(from), r.stateDir(to)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.stateDir(to), "path"), []byte(to), 0o600)
}

func (r *Repo) hasState(dir string) bool {
	fi, err := os.Lstat(filepath.Join(r.stateDir(dir), "index"))
	return err == nil && fi.Mode().IsRegular()
}
