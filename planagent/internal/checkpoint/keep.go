package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// keepRef is the ref that keeps commit reachable while the run may still
// copy or merge it, so a gc of the repository meanwhile cannot prune it
// (DropKeeps removes them when the run ends).
func keepRef(commit string) string { return "refs/codeagent/keep/" + commit }

// keepRefs are the keep refs this process made, by commit: each is made
// once, two update-refs of one ref at once (the prewarm and an attempt's
// copy) colliding on its lock.
type keepRefs struct {
	mu   sync.Mutex
	made map[string]bool
}

// once has make make commit's keep ref unless this process made it; make
// says whether it did. Calls for any commit wait for one under way.
func (k *keepRefs) once(commit string, make func() (bool, error)) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.made[commit] {
		return nil
	}
	made, err := make()
	if err != nil || !made {
		return err
	}
	k.add(commit)
	return nil
}

// madeBy records commit's keep ref as made by another command (the move's
// update-ref).
func (k *keepRefs) madeBy(commit string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.add(commit)
}

// add records commit (the caller holds mu).
func (k *keepRefs) add(commit string) {
	if k.made == nil {
		k.made = map[string]bool{}
	}
	k.made[commit] = true
}

// forget forgets every keep ref made: they are deleted, or may be.
func (k *keepRefs) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.made = nil
}

// keep makes the keep ref of commit, once per process (keepRefs).
func (r *Repo) keep(ctx context.Context, commit string) error {
	return r.keeps.once(commit, func() (bool, error) {
		if r.pending.has(commit) {
			// Not in the repository yet, whose gc cannot prune it then: a
			// ref to it there would be a broken one. Made once it is moved
			// to (the next copy of it asks again).
			return false, nil
		}
		if _, err := r.g.run(context.WithoutCancel(ctx), "update-ref", keepRef(commit), commit); err != nil {
			// Not cut short: a git update-ref killed midway leaves its lock
			// file, and every later copy of that commit then fails with
			// "cannot lock ref … File exists". Prewarm's context is cancelled
			// as soon as the run starts. It takes milliseconds.
			return false, err
		}
		return true, nil
	})
}

// staleLockAge is how old a keep ref's lock must be to be taken for the
// leftover of a killed planagent: git holds it for the milliseconds of one
// update-ref, so a minute leaves a wide margin on a loaded machine.
const staleLockAge = time.Minute

// clearStaleKeepLocks removes the refs/codeagent/keep/<sha>.lock files a
// planagent killed mid update-ref left in the repository: nothing else
// takes them away, and each blocks that commit's keep ref for good. Only
// our own namespace, only old ones; a failure costs nothing but the lock.
func (r *Repo) clearStaleKeepLocks() {
	if r.commonDir == "" {
		return
	}
	locks, _ := filepath.Glob(filepath.Join(r.commonDir, "refs", "codeagent", "keep", "*.lock"))
	for _, l := range locks {
		if fi, err := os.Lstat(l); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleLockAge {
			_ = os.Remove(l)
		}
	}
}

// DropKeeps deletes the refs that kept the run's commits reachable for its
// copies (refs/codeagent/keep/): once a run ends, its checkpoints are on
// the branch, and what was never merged may be garbage-collected.
func (r *Repo) DropKeeps(ctx context.Context) error {
	r.keeps.forget()
	r.clearStaleKeepLocks()
	out, err := r.g.run(ctx, "for-each-ref", "--format=delete %(refname)", "refs/codeagent/keep/")
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	_, err = r.g.runIn(ctx, []byte(out), "update-ref", "--stdin")
	return err
}
