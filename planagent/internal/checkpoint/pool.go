package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// awaitRecycle waits, while the pool has no ready copy of commit, for the
// RecycleCopy calls making one.
func (r *Repo) awaitRecycle(ctx context.Context, commit string) error {
	for {
		r.poolMu.Lock()
		if r.remaking[commit] == 0 || r.readyAt(commit) {
			r.poolMu.Unlock()
			return nil
		}
		if r.recycled == nil {
			r.recycled = make(chan struct{})
		}
		ended := r.recycled
		r.poolMu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readyAt reports whether the pool has a ready copy of commit (the caller
// holds poolMu).
func (r *Repo) readyAt(commit string) bool {
	for p := range r.ready {
		if r.madeAt[p] == commit {
			return true
		}
	}
	return false
}

// SetPool keeps up to max thrown-away copies in dir for NewCopy to reuse.
func (r *Repo) SetPool(dir string, max int) {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	r.pool, r.poolMax = dir, max
}

// takeFromPool moves a thrown-away copy to dir, the one made at commit
// when there is one (in a chain, the acceptance copy of the task before:
// its files and packs are already what the next task's copy needs), else
// the one thrown away last (the nearest commit, the fewest files to write).
func (r *Repo) takeFromPool(dir, commit string) (taken, ready bool, at string) {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.pool == "" {
		return false, false, ""
	}
	entries, _ := os.ReadDir(r.pool)
	// Ready copies of commit first, then other copies of commit, then
	// ready copies of other commits (only what differs is written), then
	// the rest, each newest first.
	var order [4][]string
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name()
		p := filepath.Join(r.pool, name)
		rank := 3
		switch {
		case r.madeAt[p] == commit && r.ready[p]:
			rank = 0
		case r.madeAt[p] == commit:
			rank = 1
		case r.ready[p]:
			rank = 2
		}
		order[rank] = append(order[rank], name)
	}
	for _, name := range slices.Concat(order[:]...) {
		from := filepath.Join(r.pool, name)
		if !r.hasState(from) {
			continue
		}
		wasReady := r.ready[from]
		delete(r.ready, from)
		if os.Rename(from, dir) == nil {
			r.movedCopy(from, filepath.Clean(dir))
			if r.moveState(from, dir) != nil {
				_ = os.RemoveAll(r.stateDir(dir)) // remade without it: every file rewritten
				return true, false, ""
			}
			return true, wasReady, r.madeAt[filepath.Clean(dir)]
		}
	}
	return false, false, ""
}

// movedCopy follows a copy's commit from one path to another (the caller
// holds poolMu).
func (r *Repo) movedCopy(from, to string) {
	if c, ok := r.madeAt[from]; ok {
		delete(r.madeAt, from)
		r.madeAt[to] = c
	}
	if r.squashed[from] {
		delete(r.squashed, from)
		r.squashed[to] = true
	}
}

// takeMadeAt is the commit the copy at dir was last made at ("" when not
// known) and whether its squash made it (squashedCopy), forgotten until
// the copy is made again.
func (r *Repo) takeMadeAt(dir string) (string, bool) {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	dir = filepath.Clean(dir)
	c, squashed := r.madeAt[dir], r.squashed[dir]
	delete(r.madeAt, dir)
	delete(r.squashed, dir)
	return c, squashed
}

// madeCopy notes the commit the copy at dir was just made at.
func (r *Repo) madeCopy(dir, commit string) {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.madeAt == nil {
		r.madeAt = map[string]string{}
	}
	r.madeAt[filepath.Clean(dir)] = commit
	delete(r.squashed, filepath.Clean(dir))
}

// squashedCopy notes that the copy at dir, made at base, now holds commit,
// its squash, whose git add wrote the index at idx: that index is the
// copy's saved one from now on. Nothing is noted when the copy was not
// made at base by this process, or the index cannot be kept.
func (r *Repo) squashedCopy(dir, base, commit, idx string) {
	dir = filepath.Clean(dir)
	r.poolMu.Lock()
	made := r.madeAt[dir]
	r.poolMu.Unlock()
	if made != base {
		return
	}
	// Copied (its mtime kept), not moved: the quarantine's index is
	// rewritten by the next squash rather than made anew.
	err := copyRegular(filepath.Join(r.stateDir(dir), "index"), idx)
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if err != nil || r.madeAt[dir] != base {
		delete(r.madeAt, dir) // the saved index may be half written
		return
	}
	if r.squashed == nil {
		r.squashed = map[string]bool{}
	}
	r.madeAt[dir] = commit
	r.squashed[dir] = true
}

// putInPool moves the copy at dir into the pool, ready (to be taken as it
// is) or not; false when the pool is full or there is none.
func (r *Repo) putInPool(dir string, ready bool) bool {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.pool == "" || !r.hasState(dir) { // no state: not a finished copy
		return false
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	if err := os.MkdirAll(r.pool, 0o755); err != nil {
		return false
	}
	if entries, _ := os.ReadDir(r.pool); len(entries) >= r.poolMax {
		return false
	}
	r.poolSeq++
	// Named in the order thrown away (takeFromPool reads them back).
	to := filepath.Join(r.pool, fmt.Sprintf("%d-%09d", os.Getpid(), r.poolSeq))
	if os.Rename(dir, to) != nil {
		return false
	}
	r.movedCopy(filepath.Clean(dir), to)
	if r.moveState(dir, to) != nil {
		_ = removeAll(to)
		return false
	}
	if ready {
		if r.ready == nil {
			r.ready = map[string]bool{}
		}
		r.ready[to] = true
	}
	return true
}
