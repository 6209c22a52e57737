package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// quarantines are the directories squashes and merges write their new
// objects into before any reaches the repository, beside the copies'
// state.
type quarantines struct {
	dir  string // where they are made
	mu   sync.Mutex
	free []string // emptied quarantines of earlier squashes
	seq  int
}

// take gives a squash an empty directory for its objects. They
// are kept between squashes with their fan-out directories (a directory
// made and removed per squash costs more than the squash's files on a
// virtual disk); one a killed planagent left is emptied first.
func (qs *quarantines) take() (string, error) {
	qs.mu.Lock()
	if n := len(qs.free); n > 0 {
		q := qs.free[n-1]
		qs.free = qs.free[:n-1]
		qs.mu.Unlock()
		return q, nil
	}
	qs.seq++
	q := filepath.Join(qs.dir, fmt.Sprintf("objects-q%d", qs.seq))
	qs.mu.Unlock()
	if err := os.RemoveAll(q); err != nil {
		return "", err
	}
	return q, os.MkdirAll(q, 0o755)
}

// put empties a quarantine of its files, those listed (what
// migrate moved is gone) or, with none, all but the index (kept to be
// rewritten), and keeps it for the next squash; one that cannot be
// emptied is removed.
func (qs *quarantines) put(q string, files []string) {
	var err error
	if files == nil {
		files, err = listFiles(q)
	}
	for _, rel := range files {
		if err == nil {
			if rerr := os.Remove(filepath.Join(q, rel)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = rerr
			}
		}
	}
	if err != nil {
		_ = os.RemoveAll(q)
		return
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.free = append(qs.free, q)
}

// forget forgets the emptied quarantines: they are being removed.
func (qs *quarantines) forget() {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.free = nil
}
