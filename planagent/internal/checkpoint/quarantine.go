package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// takeQuarantine gives a squash an empty directory for its objects. They
// are kept between squashes with their fan-out directories (a directory
// made and removed per squash costs more than the squash's files on a
// virtual disk); one a killed planagent left is emptied first.
func (r *Repo) takeQuarantine() (string, error) {
	r.qMu.Lock()
	if n := len(r.qFree); n > 0 {
		q := r.qFree[n-1]
		r.qFree = r.qFree[:n-1]
		r.qMu.Unlock()
		return q, nil
	}
	r.qSeq++
	q := filepath.Join(filepath.Dir(r.private), fmt.Sprintf("objects-q%d", r.qSeq))
	r.qMu.Unlock()
	if err := os.RemoveAll(q); err != nil {
		return "", err
	}
	return q, os.MkdirAll(q, 0o755)
}

// putQuarantine empties a quarantine of its files, those listed (what
// migrate moved is gone) or, with none, all but the index (kept to be
// rewritten), and keeps it for the next squash; one that cannot be
// emptied is removed.
func (r *Repo) putQuarantine(q string, files []string) {
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
	r.qMu.Lock()
	defer r.qMu.Unlock()
	r.qFree = append(r.qFree, q)
}
