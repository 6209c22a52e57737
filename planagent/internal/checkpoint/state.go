package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// copyStates are what the host keeps of each copy, where no container
// reaches: the index the copy had when the host made it, and its path, in
// a directory per copy under dir (in the repository's git directory).
type copyStates struct{ dir string }

// of is where the host keeps what it knows of the copy at dir.
func (s copyStates) of(dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:10]))
}

// save keeps the copy's index, just made by the host, and the copy's
// path (for DrainPool).
func (s copyStates) save(dir string) error {
	state := s.of(dir)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	if err := copyRegular(filepath.Join(state, "index"), filepath.Join(dir, ".git", "index")); err != nil {
		return fmt.Errorf("keep the copy's index: %w", err)
	}
	return os.WriteFile(filepath.Join(state, "path"), []byte(dir), 0o600)
}

// move follows a copy that moved from one path to another.
func (s copyStates) move(from, to string) error {
	_ = os.RemoveAll(s.of(to))
	if err := os.Rename(s.of(from), s.of(to)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.of(to), "path"), []byte(to), 0o600)
}

// has reports whether the copy at dir is a finished one: its state was
// saved.
func (s copyStates) has(dir string) bool {
	fi, err := os.Lstat(filepath.Join(s.of(dir), "index"))
	return err == nil && fi.Mode().IsRegular()
}
