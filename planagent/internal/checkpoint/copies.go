package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Repo's copy methods choose which copy and when: a pooled one or a new
// one (NewCopy), one remade ahead of its use (RecycleCopy, Prewarm), one
// kept, set aside or deleted (RemoveCopy, SetAside, DiscardCopy, DrainPool).
// The making itself is copyMaker's (copy.go).

// NewCopy makes a self-contained copy of the tree at commit in dir: a git
// repository of its own (its objects packed from the repository's,
// no object file shared with the repository, no remote) with commit checked
// out, usable where only dir is mounted (a container), git included. A copy
// thrown away earlier is reused when there is one: its git directory is
// made anew and only the files that differ are written, which is what keeps
// a copy cheap on a large tree.
func (r *Repo) NewCopy(ctx context.Context, dir, commit string) error {
	if err := r.keep(ctx, commit); err != nil {
		return err
	}
	if err := r.pool.awaitRecycle(ctx, commit); err != nil {
		return err
	}
	taken, ready, at := r.pool.take(dir, commit)
	if ready && at == commit {
		return nil
	}
	if !taken {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return r.copies.remake(ctx, dir, commit, ready)
}

// RecycleCopy throws the copy at dir away as RemoveCopy does, but first
// remakes it at commit: the pool hands it to the next NewCopy of commit as
// it is, and to a NewCopy of another commit with only what differs written
// (remake). It is for a copy whose commit the next copy is likely to be of
// or near, at a moment the caller would otherwise wait: the acceptance
// copy of a merge that passed, remade while the workspace moves, is the
// next task's copy in a chain. Nothing but this process may write the
// copy any more (its commands have ended).
func (r *Repo) RecycleCopy(ctx context.Context, dir, commit string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || !r.states.has(dir) {
		return r.RemoveCopy(dir) // gone, or never finished: nothing to remake
	}
	if !r.pool.startRecycle(commit) {
		// No room: not remade only to be deleted.
		return r.RemoveCopy(dir)
	}
	defer r.pool.endRecycle(commit)
	// The object cache's small packs are merged here, off the caller's
	// path, rather than by the next copy made on a task's path.
	if err := r.cache.fill(ctx, commit, maxCachePacks); err != nil {
		return errors.Join(err, r.DiscardCopy(dir))
	}
	if err := r.copies.remake(ctx, dir, commit, false); err != nil {
		return errors.Join(err, r.DiscardCopy(dir))
	}
	if !r.pool.put(dir, true) {
		return r.DiscardCopy(dir)
	}
	return nil
}

// SetAside moves the finished copy at dir out of its place at once, for a
// RecycleCopy of it off the caller's path to remake where it went: the
// caller's copies on disk are counted by their places (--parallel bounds
// them). With no pool, or a copy that is not a finished one, it is thrown
// away (RemoveCopy) and ok is false.
func (r *Repo) SetAside(dir string) (aside string, ok bool, err error) {
	aside = r.pool.aside()
	if fi, lerr := os.Lstat(dir); aside == "" || lerr != nil || !fi.IsDir() || !r.states.has(dir) {
		return "", false, r.RemoveCopy(dir)
	}
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", false, errors.Join(err, r.RemoveCopy(dir))
	}
	if err := os.Rename(dir, aside); err != nil {
		return "", false, errors.Join(err, r.RemoveCopy(dir))
	}
	r.pool.movedTo(filepath.Clean(dir), aside)
	if err := r.states.move(dir, aside); err != nil {
		return "", false, errors.Join(err, r.DiscardCopy(aside))
	}
	return aside, true, nil
}

// Prewarm fills the pool with copies of commit, one after another, until
// the pool is full or ctx is done; a copy cut short is removed. It is meant
// to run while nothing else uses the repository's copies (the planner
// thinking, the plan awaiting confirmation): on a large tree a full
// checkout costs seconds (10 000 files: 4-7 s on a virtual disk), and
// without it each of a run's first attempts (one per parallel task, one
// for acceptance) would pay for one.
func (r *Repo) Prewarm(ctx context.Context, commit string) (int, error) {
	pool, max := r.pool.settings()
	if pool == "" {
		return 0, nil
	}
	if err := r.keep(ctx, commit); err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return 0, err
	}
	staging := pool + ".staging"
	defer os.RemoveAll(staging)
	made := 0
	for i := 0; ctx.Err() == nil; i++ {
		if entries, _ := os.ReadDir(pool); len(entries) >= max {
			break
		}
		dir := filepath.Join(staging, fmt.Sprintf("%d-%d", os.Getpid(), i))
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = r.copies.remake(ctx, dir, commit, false)
		}
		if err != nil {
			_ = r.DiscardCopy(dir)
			if ctx.Err() != nil {
				break
			}
			return made, fmt.Errorf("prepare a copy of the workspace: %w", err)
		}
		if !r.pool.put(dir, false) {
			_ = r.DiscardCopy(dir)
			break
		}
		made++
	}
	return made, nil
}

// DrainPool deletes the thrown-away copies kept for reuse, and the state of
// copies that are gone: once a run ends, nothing a failed attempt made
// stays on the disk.
func (r *Repo) DrainPool() error {
	return r.pool.drain(func(pool string) error { return r.drain(pool) })
}

// drain is DrainPool's work, with the pool held.
func (r *Repo) drain(pool string) error {
	var errs []error
	if pool != "" {
		// First a copy Prewarm was making when planagent was killed.
		errs = append(errs, removeAll(pool+".staging"), removeAll(pool+".aside"))
		entries, err := os.ReadDir(pool)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for _, e := range entries {
			dir := filepath.Join(pool, e.Name())
			errs = append(errs, removeAll(dir), os.RemoveAll(r.states.of(dir)))
		}
	}
	// The object cache holds the whole history: not kept between runs.
	errs = append(errs, r.cache.remove(func() []error {
		r.quarantines.forget()
		// The objects of the tasks the run never moved to (failed, refused,
		// merged onto a state it left).
		errs := []error{r.pending.drain()}
		// The quarantines, and what a killed planagent left: a cache being made.
		leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(r.private), "objects*-*"))
		for _, l := range leftovers {
			errs = append(errs, os.RemoveAll(l))
		}
		return errs
	})...)
	states, _ := os.ReadDir(r.private)
	for _, s := range states {
		p, err := os.ReadFile(filepath.Join(r.private, s.Name(), "path"))
		if err == nil {
			if _, err := os.Lstat(string(p)); err == nil {
				continue // a copy still in use
			}
		}
		errs = append(errs, os.RemoveAll(filepath.Join(r.private, s.Name())))
	}
	return errors.Join(errs...)
}

// RemoveCopy throws a copy away: into the pool when there is room (NewCopy
// remakes it before it is used again), else off the disk.
func (r *Repo) RemoveCopy(dir string) error {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return os.RemoveAll(r.states.of(dir))
	}
	if r.pool.put(dir, false) {
		return nil
	}
	return r.DiscardCopy(dir)
}

// DiscardCopy deletes a copy without keeping it for reuse: for the copy of
// an attempt whose agent may still be writing (it timed out, and its runtime
// could not stop it). A process that still has its working directory there
// can no longer create files in the deleted tree, while a copy recycled for
// another attempt would take whatever it writes next.
func (r *Repo) DiscardCopy(dir string) error {
	r.pool.forget(dir)
	return errors.Join(removeAll(dir), os.RemoveAll(r.states.of(dir)))
}
