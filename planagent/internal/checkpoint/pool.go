package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// copyPool is the thrown-away copies kept for reuse (in dir, up to max)
// and what this process knows of every copy it made: the commit it was
// made at, whether a RecycleCopy remade it (ready) or its squash last wrote
// it (squashed), and the RecycleCopy calls under way.
type copyPool struct {
	states copyStates
	mu     sync.Mutex
	dir    string // "" = no pool
	max    int
	seq    int
	// madeAt is the commit each copy was last made at, by its path: a
	// copy taken from the pool for the commit it holds writes nothing.
	madeAt map[string]string
	// ready are the pooled copies remade by RecycleCopy and untouched
	// since, by their path: taken as they are at their commit, and brought
	// to another one by writing only what differs. remaking counts the
	// RecycleCopy calls under way by commit, which NewCopy of that commit
	// waits for (recycled is closed as each ends) rather than remake
	// another copy.
	ready map[string]bool
	// squashed are the copies whose squash made the commit madeAt names,
	// by their path: git add looked at every file then, and its index
	// is their saved one.
	squashed  map[string]bool
	remaking  map[string]int
	recycled  chan struct{}
	recycling sync.WaitGroup
}

// settings are the pool's directory ("" for none) and size.
func (cp *copyPool) settings() (dir string, max int) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.dir, cp.max
}

// startRecycle counts a RecycleCopy to commit as under way, unless the
// pool has no room for its copy (false: nothing counted). Each true is
// followed by one endRecycle.
func (cp *copyPool) startRecycle(commit string) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if entries, _ := os.ReadDir(cp.dir); cp.dir == "" || len(entries) >= cp.max {
		return false
	}
	if cp.remaking == nil {
		cp.remaking = map[string]int{}
	}
	cp.remaking[commit]++
	cp.recycling.Add(1)
	return true
}

// endRecycle ends a startRecycle, waking the NewCopy calls waiting.
func (cp *copyPool) endRecycle(commit string) {
	cp.mu.Lock()
	if cp.remaking[commit]--; cp.remaking[commit] == 0 {
		delete(cp.remaking, commit)
	}
	if cp.recycled != nil {
		close(cp.recycled)
		cp.recycled = nil
	}
	cp.mu.Unlock()
	cp.recycling.Done()
}

// aside is where SetAside moves a copy next, "" with no pool.
func (cp *copyPool) aside() string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.seq++
	if cp.dir == "" {
		return ""
	}
	return filepath.Join(cp.dir+".aside", fmt.Sprintf("%d-%09d", os.Getpid(), cp.seq))
}

// movedTo follows a copy from one path to another.
func (cp *copyPool) movedTo(from, to string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.moved(from, to)
}

// madeAtOf is the commit the copy at dir was last made at, "" when not
// known.
func (cp *copyPool) madeAtOf(dir string) string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.madeAt[filepath.Clean(dir)]
}

// forget forgets the copy at dir: it is being deleted.
func (cp *copyPool) forget(dir string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	delete(cp.madeAt, filepath.Clean(dir))
	delete(cp.squashed, filepath.Clean(dir))
}

// drain waits for the recycles under way, forgets which copies are ready
// and runs while with the pool's directory, holding the pool meanwhile.
func (cp *copyPool) drain(while func(dir string) error) error {
	cp.recycling.Wait()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.ready = nil
	return while(cp.dir)
}

// awaitRecycle waits, while the pool has no ready copy of commit, for the
// RecycleCopy calls making one.
func (cp *copyPool) awaitRecycle(ctx context.Context, commit string) error {
	for {
		cp.mu.Lock()
		if cp.remaking[commit] == 0 || cp.readyAt(commit) {
			cp.mu.Unlock()
			return nil
		}
		if cp.recycled == nil {
			cp.recycled = make(chan struct{})
		}
		ended := cp.recycled
		cp.mu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readyAt reports whether the pool has a ready copy of commit (the caller
// holds mu).
func (cp *copyPool) readyAt(commit string) bool {
	for p := range cp.ready {
		if cp.madeAt[p] == commit {
			return true
		}
	}
	return false
}

// SetPool keeps up to max thrown-away copies in dir for NewCopy to reuse.
func (r *Repo) SetPool(dir string, max int) {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	r.pool.dir, r.pool.max = dir, max
}

// take moves a thrown-away copy to dir, the one made at commit
// when there is one (in a chain, the acceptance copy of the task before:
// its files and packs are already what the next task's copy needs), else
// the one thrown away last (the nearest commit, the fewest files to write).
func (cp *copyPool) take(dir, commit string) (taken, ready bool, at string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.dir == "" {
		return false, false, ""
	}
	entries, _ := os.ReadDir(cp.dir)
	// Ready copies of commit first, then other copies of commit, then
	// ready copies of other commits (only what differs is written), then
	// the rest, each newest first.
	var order [4][]string
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name()
		p := filepath.Join(cp.dir, name)
		rank := 3
		switch {
		case cp.madeAt[p] == commit && cp.ready[p]:
			rank = 0
		case cp.madeAt[p] == commit:
			rank = 1
		case cp.ready[p]:
			rank = 2
		}
		order[rank] = append(order[rank], name)
	}
	for _, name := range slices.Concat(order[:]...) {
		from := filepath.Join(cp.dir, name)
		if !cp.states.has(from) {
			continue
		}
		wasReady := cp.ready[from]
		delete(cp.ready, from)
		if os.Rename(from, dir) == nil {
			cp.moved(from, filepath.Clean(dir))
			if cp.states.move(from, dir) != nil {
				_ = os.RemoveAll(cp.states.of(dir)) // remade without it: every file rewritten
				return true, false, ""
			}
			return true, wasReady, cp.madeAt[filepath.Clean(dir)]
		}
	}
	return false, false, ""
}

// moved follows a copy's commit from one path to another (the caller
// holds mu).
func (cp *copyPool) moved(from, to string) {
	if c, ok := cp.madeAt[from]; ok {
		delete(cp.madeAt, from)
		cp.madeAt[to] = c
	}
	if cp.squashed[from] {
		delete(cp.squashed, from)
		cp.squashed[to] = true
	}
}

// takeMadeAt is the commit the copy at dir was last made at ("" when not
// known) and whether its squash made it (squashedTo), forgotten until
// the copy is made again.
func (cp *copyPool) takeMadeAt(dir string) (string, bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	dir = filepath.Clean(dir)
	c, squashed := cp.madeAt[dir], cp.squashed[dir]
	delete(cp.madeAt, dir)
	delete(cp.squashed, dir)
	return c, squashed
}

// made notes the commit the copy at dir was just made at.
func (cp *copyPool) made(dir, commit string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.madeAt == nil {
		cp.madeAt = map[string]string{}
	}
	cp.madeAt[filepath.Clean(dir)] = commit
	delete(cp.squashed, filepath.Clean(dir))
}

// squashedTo notes that the copy at dir, made at base, now holds commit,
// its squash, whose git add wrote the index at idx: that index is the
// copy's saved one from now on. Nothing is noted when the copy was not
// made at base by this process, or the index cannot be kept.
func (cp *copyPool) squashedTo(dir, base, commit, idx string) {
	dir = filepath.Clean(dir)
	cp.mu.Lock()
	made := cp.madeAt[dir]
	cp.mu.Unlock()
	if made != base {
		return
	}
	// Copied (its mtime kept), not moved: the quarantine's index is
	// rewritten by the next squash rather than made anew.
	err := copyRegular(filepath.Join(cp.states.of(dir), "index"), idx)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if err != nil || cp.madeAt[dir] != base {
		delete(cp.madeAt, dir) // the saved index may be half written
		return
	}
	if cp.squashed == nil {
		cp.squashed = map[string]bool{}
	}
	cp.madeAt[dir] = commit
	cp.squashed[dir] = true
}

// put moves the copy at dir into the pool, ready (to be taken as it
// is) or not; false when the pool is full or there is none.
func (cp *copyPool) put(dir string, ready bool) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.dir == "" || !cp.states.has(dir) { // no state: not a finished copy
		return false
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	if err := os.MkdirAll(cp.dir, 0o755); err != nil {
		return false
	}
	if entries, _ := os.ReadDir(cp.dir); len(entries) >= cp.max {
		return false
	}
	cp.seq++
	// Named in the order thrown away (take reads them back).
	to := filepath.Join(cp.dir, fmt.Sprintf("%d-%09d", os.Getpid(), cp.seq))
	if os.Rename(dir, to) != nil {
		return false
	}
	cp.moved(filepath.Clean(dir), to)
	if cp.states.move(dir, to) != nil {
		_ = removeAll(to)
		return false
	}
	if ready {
		if cp.ready == nil {
			cp.ready = map[string]bool{}
		}
		cp.ready[to] = true
	}
	return true
}
