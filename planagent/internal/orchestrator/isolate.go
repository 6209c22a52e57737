package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// Each attempt works in its own copy of the workspace, made from the
// integration state (State.Checkpoints.Head) when it is dispatched. A
// completed attempt's changes become one commit, re-applied onto the
// integration state in completion order (the merge queue, one at a time);
// the task's acceptance commands run on a copy of that merged tree, and
// only then does the integration state — the user's branch and files —
// move. A failed attempt's copy is thrown away, shell-made files and all.

// Repo is what the orchestrator needs of the checkpoint repository.
type Repo interface {
	// NewCopy makes a self-contained copy of the tree at commit in dir.
	NewCopy(ctx context.Context, dir, commit string) error
	// Squash commits everything in the copy at dir (agent commits included)
	// as one commit on top of base with the message given, and returns it;
	// base itself when nothing changed. removed names what was taken out of
	// the copy first (nested repositories' .git, special files).
	Squash(ctx context.Context, dir, base, subject, body string) (commit string, removed []string, err error)
	// Apply re-applies commit (one commit on top of base) onto onto without
	// touching any working tree; a conflict is a *checkpoint.ConflictError.
	Apply(ctx context.Context, dir, base, commit, onto string) (string, error)
	// Advance moves the integration branch and the workspace files from old
	// to new, refusing to overwrite a file changed since.
	Advance(ctx context.Context, old, new string) error
	// Head is the commit the integration branch is at.
	Head(ctx context.Context) (string, error)
	// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
	IsAncestor(ctx context.Context, a, b string) bool
	// RemoveCopy throws a copy away (it may be recycled for a later attempt).
	RemoveCopy(dir string) error
	// RecycleCopy throws a copy away remade at commit, for the next copy
	// of commit to take as it is.
	RecycleCopy(ctx context.Context, dir, commit string) error
	// SetAside moves a finished copy out of its place at once, for a
	// RecycleCopy of it later; ok false: it was thrown away instead.
	SetAside(dir string) (aside string, ok bool, err error)
	// DiscardCopy deletes a copy something may still write into.
	DiscardCopy(dir string) error
	// DropKeeps forgets what kept the run's unmerged commits alive.
	DropKeeps(ctx context.Context) error
	// DrainPool deletes the thrown-away copies kept for reuse.
	DrainPool() error
	// Diff is the patch from commit from to commit to: a candidate's size.
	Diff(ctx context.Context, from, to string) (string, error)
	// KeepAttempt keeps commit, the squash of attempt n of task in run
	// that is not merged, under its ref (checkpoint.AttemptRef), whole in
	// the repository once the run ends.
	KeepAttempt(ctx context.Context, run, task string, n int, commit string) error
}

// mergeJob is a completed attempt waiting in the merge queue.
type mergeJob struct {
	id, subject, body string
	dir, base         string
	runID             string
	acceptance        []string
	attempt           int
	// squashed is its commit, made while it waits (a squash depends on
	// nothing merged before it), nil to make it in the merge.
	squashed *squashing
}

// squashing is a Squash under way off the loop.
type squashing struct {
	done chan struct{}
	res  squashResult
}

// wait returns what Squash returned, as often as it is asked (a merge made
// again asks again).
func (s *squashing) wait() squashResult {
	<-s.done
	return s.res
}

// squashResult is what Squash returned.
type squashResult struct {
	commit  string
	removed []string
	err     error
}

// isolated reports whether attempts work in copies (a run with checkpoints).
func (r *run) isolated() bool {
	return r.o.opts.Repo != nil && r.st.Checkpoints != nil
}

// makeCopy makes the copy of commit base for attempt of task id in dir,
// replacing whatever a crashed earlier try left at that path. It touches
// only the repository: dispatch runs it off the loop.
func (w *worker) makeCopy(ctx context.Context, id string, attempt int, dir, base string) error {
	if err := w.opts.Repo.RemoveCopy(dir); err != nil {
		return fmt.Errorf("task %s: clear the attempt's copy: %w", id, err)
	}
	if err := w.opts.Repo.NewCopy(ctx, dir, base); err != nil {
		return fmt.Errorf("task %s: copy the workspace for attempt %d: %w", id, attempt, err)
	}
	return nil
}

// dropCopy throws the copy of the attempt that just ended away. A timed-out
// attempt's copy is deleted, never recycled: the local and compose runtimes
// cannot stop its agent (it gives up on its own timeout a moment later), so
// a shell command of it may still be writing there.
func (r *run) dropCopy(id string) {
	abandoned := r.underway.copyDropped(id)
	if !r.isolated() {
		return
	}
	info := r.info(id)
	dir := r.o.opts.Layout.Attempt(r.st.RunID, id, info.Attempt)
	remove := r.o.opts.Repo.RemoveCopy
	if abandoned {
		remove = r.o.opts.Repo.DiscardCopy
	}
	if err := remove(dir); err != nil {
		r.o.opts.Logger.Warn("remove the attempt's copy", "task", id, "dir", dir, "err", err)
	}
}

// recycleCopy throws the copy of the attempt that just completed away,
// off the loop, remade at the integration state (RecycleCopy): the next
// copy made is likely the next task's acceptance copy, of a commit one
// task ahead, which then writes only what that task changed.
func (r *run) recycleCopy(ctx context.Context, id string) {
	if !r.isolated() || r.underway.isAbandoned(id) {
		r.dropCopy(id)
		return
	}
	dir := r.o.opts.Layout.Attempt(r.st.RunID, id, r.info(id).Attempt)
	head := r.st.Checkpoints.Head
	// Out of its place now: --parallel counts the copies there.
	aside, ok, err := r.o.opts.Repo.SetAside(dir)
	if err != nil {
		r.o.opts.Logger.Warn("remove the attempt's copy", "task", id, "dir", dir, "err", err)
	}
	if !ok {
		return
	}
	r.merges.Go(func() {
		if err := r.o.opts.Repo.RecycleCopy(ctx, aside, head); err != nil {
			r.o.opts.Logger.Warn("remove the attempt's copy", "task", id, "dir", aside, "err", err)
		}
	})
}

// enqueueMerge puts a completed attempt in the merge queue, and commits
// its copy off the loop meanwhile: the squash needs only the copy and its
// base, so with parallel tasks it runs beside the merge ahead of it
// rather than in the queue's one line.
func (r *run) enqueueMerge(ctx context.Context, id string) {
	t, _ := r.g.Get(id)
	info := r.info(id)
	job := mergeJob{
		id: id, subject: id + ": " + titleOf(t), body: info.Summary,
		dir: r.o.opts.Layout.Attempt(r.st.RunID, id, info.Attempt), base: info.Base,
		acceptance: t.Acceptance, attempt: info.Attempt, runID: r.st.RunID,
	}
	if r.isolated() {
		sq := &squashing{done: make(chan struct{})}
		job.squashed = sq
		r.squashing.Go(func() {
			defer close(sq.done)
			sq.res.commit, sq.res.removed, sq.res.err = r.o.opts.Repo.Squash(ctx, job.dir, job.base, job.subject, job.body)
		})
	}
	r.underway.mergeQueued(job)
}

// startMerge starts the merge of the queue's first attempt, id, off the
// loop. Each merge goes onto the state the previous one left (a.Onto, or
// the integration state).
func (r *run) startMerge(ctx context.Context, a next.ActStartMerge) error {
	job, err := r.underway.mergeStarted(a.ID)
	if err != nil {
		return err
	}
	onto := a.Onto
	if onto == "" {
		onto = r.st.Checkpoints.Head
	}
	r.merges.Go(func() {
		ev, after := r.work.merge(ctx, job, onto)
		r.send(ev)
		after()
	})
	return nil
}

// merge commits the attempt, applies it onto the integration state and runs
// the acceptance commands on the result. It moves nothing: the loop
// advances the integration state when the verdict is in. after is for
// once the verdict is sent: it throws the acceptance copy away, remade at
// the merged state when that passed, as the next task's copy is likely to
// be (RecycleCopy), while the loop moves the workspace.
func (w *worker) merge(ctx context.Context, job mergeJob, onto string) (out next.EvMerged, after func()) {
	repo := w.opts.Repo
	out = next.EvMerged{ID: job.id, Summary: job.body, Onto: onto, Attempt: job.attempt}
	after = func() {}
	var s squashResult
	// An attempt that made a commit and is not merged keeps it under its
	// ref, for the person who wants to see (or pick) what it did. A fault
	// of the machine redoes the attempt under its number: nothing to keep.
	defer func() {
		if s.err != nil || s.commit == "" || s.commit == job.base || out.Env != nil || (out.Failure == "" && len(out.Conflict) == 0) {
			return
		}
		if err := repo.KeepAttempt(ctx, job.runID, job.id, job.attempt, s.commit); err != nil {
			w.opts.Logger.Warn("keep the attempt's result under its ref", "task", job.id, "attempt", job.attempt, "err", err)
			return
		}
		out.Kept = checkpoint.AttemptRef(job.runID, job.id, job.attempt)
	}()
	if job.squashed != nil {
		s = job.squashed.wait()
	} else {
		s.commit, s.removed, s.err = repo.Squash(ctx, job.dir, job.base, job.subject, job.body)
	}
	commit, removed, err := s.commit, s.removed, s.err
	for _, what := range removed {
		w.opts.Logger.Warn("removed from the attempt's copy before its commit", "task", job.id, "removed", what)
	}
	if len(removed) > 0 {
		out.Summary = strings.TrimSpace(out.Summary + "\n\n(planagent removed from the task's copy: " + strings.Join(removed, "; ") + ")")
	}
	if err != nil {
		out.Failure = fmt.Sprintf("commit the attempt's changes: %v", err)
		out.Env = envErr("commit the attempt's changes", err)
		return out, after
	}
	out.Candidate = onto
	if commit != job.base {
		out.Candidate, err = repo.Apply(ctx, job.dir, job.base, commit, onto)
		var conflict *checkpoint.ConflictError
		if errors.As(err, &conflict) {
			out.Conflict = conflict.Files
			return out, after
		}
		if err != nil {
			out.Failure = fmt.Sprintf("merge the attempt's changes: %v", err)
			out.Env = envErr("merge the attempt's changes", err)
			return out, after
		}
		out.Changed = true
	}
	if len(job.acceptance) == 0 {
		return out, after
	}
	// The acceptance commands see the merged tree, not the attempt's copy:
	// what passes is what the user gets.
	dir := job.dir + volume.AcceptSuffix
	after = func() {
		remove := repo.RemoveCopy
		if out.Failure == "" {
			remove = func(dir string) error { return repo.RecycleCopy(ctx, dir, out.Candidate) }
		}
		if err := remove(dir); err != nil {
			w.opts.Logger.Warn("remove the acceptance copy", "dir", dir, "err", err)
		}
	}
	if err := repo.RemoveCopy(dir); err != nil {
		out.Failure = fmt.Sprintf("clear the acceptance copy: %v", err)
		out.Env = envErr("clear the acceptance copy", err)
		return out, after
	}
	if err := repo.NewCopy(ctx, dir, out.Candidate); err != nil {
		out.Failure = fmt.Sprintf("copy the merged tree for the acceptance commands: %v", err)
		out.Env = envErr("copy the merged tree for the acceptance commands", err)
		return out, after
	}
	out.Failure, out.Acceptance, out.Env = w.runAcceptance(ctx, dir, job.acceptance, true)
	return out, after
}

// integrate moves the integration state to a merged attempt's commit. The
// target is saved first, so a crash in between is finished by resume.
func (r *run) integrate(ctx context.Context, id, candidate string) error {
	cp := r.st.Checkpoints
	info := r.info(id)
	if candidate == cp.Head {
		return nil // nothing changed
	}
	info.Merging = candidate
	if err := r.record(id); err != nil {
		return err
	}
	if err := r.st.Sync(); err != nil { // before the branch moves
		return err
	}
	r.failpoint("advance")
	if err := r.moveTo(ctx, id, candidate); err != nil {
		var ug *userGitError
		if !errors.As(err, &ug) {
			info.Merging = "" // the task's failure: the decision step's
		}
		return err
	}
	r.failpoint("advanced")
	return nil
}

// recoverMerges hands next each merge a crash interrupted between saving
// its target and recording it, with where the branch is now: next decides
// whether moving again finishes it (ActFinishMerge) or the branch was
// moved by someone else and the task is merged again (ActForgetMerge).
func (r *run) recoverMerges(ctx context.Context) error {
	if !r.isolated() {
		return nil
	}
	cp := r.st.Checkpoints
	for _, id := range slices.Sorted(maps.Keys(r.st.Info)) {
		info := r.st.Info[id]
		if info.Merging == "" {
			continue
		}
		head, err := r.o.opts.Repo.Head(ctx)
		if err != nil {
			return fmt.Errorf("recover the merge of %s: %w", id, err)
		}
		ev := next.EvInterruptedMerge{ID: id, Head: head, Target: info.Merging, Checkpoint: cp.Head,
			Summary: info.Summary, Acceptance: info.Acceptance}
		if head != info.Merging && head != cp.Head {
			ev.Ahead = r.o.opts.Repo.IsAncestor(ctx, cp.Head, head)
		}
		if err := r.handle(ctx, []event{ev}); err != nil {
			return err
		}
	}
	return nil
}

// finishMerge moves the integration state to an interrupted merge's target
// again, and records it as the task's checkpoint.
func (r *run) finishMerge(ctx context.Context, a next.ActFinishMerge) error {
	if err := r.moveTo(ctx, a.ID, a.Target); err != nil {
		var ug *userGitError
		if errors.As(err, &ug) {
			return err
		}
		return fmt.Errorf("recover the merge of %s: %w", a.ID, err)
	}
	return nil
}

// moveTo moves the integration state (the run's branch and the workspace)
// from the run's last checkpoint to target, a commit on top of it, and
// records target as task id's commit. The user's own git work meanwhile
// is never dropped nor written over:
//
//   - commits on the run's branch: the task goes on top of them, merged by
//     git (merge-tree, three-way, no working tree), said in one line; when
//     it does not apply, the run stops (userGitError) naming the files;
//   - another branch or a detached HEAD checked out: the run stops before
//     moving anything (the checkout's files are the other branch's, and
//     the run's branch is not to move under a user who left it);
//   - the branch reset or rewritten under the run's checkpoint: the run
//     stops too, as it cannot tell which commits the user meant to drop;
//   - uncommitted changes of the user's in files the task changed: git
//     refuses to write over them, and the run stops, naming them.
//
// A stopped merge keeps its target (TaskInfo.Merging) saved: resume tries
// it again, after the user switched back or changed their commit.
func (r *run) moveTo(ctx context.Context, id, target string) error {
	cp, info := r.st.Checkpoints, r.info(id)
	repo := r.o.opts.Repo
	err := repo.Advance(ctx, cp.Head, target)
	var moved *checkpoint.MovedError
	if errors.As(err, &moved) && moved.Ahead {
		r.note(fmt.Sprintf("task %s: %s has commits that are not the run's (now at %s): merging the task on top of them", id, r.branchName(), shortID(moved.Head)))
		var merged string
		merged, err = repo.Apply(ctx, "", cp.Head, target, moved.Head)
		var conflict *checkpoint.ConflictError
		if errors.As(err, &conflict) {
			return &userGitError{msg: fmt.Sprintf("task %s conflicts with your commits on %s (now at %s) in %s: nothing was merged and the task's work is kept; change or revert your commit so the task applies, then `planagent resume %s`",
				id, r.branchName(), shortID(moved.Head), strings.Join(conflict.Files, ", "), r.st.RunID)}
		}
		if err != nil {
			return fmt.Errorf("merge task %s onto your commits: %w", id, err)
		}
		info.Merging = merged
		if err := r.record(id); err != nil {
			return err
		}
		if err := r.st.Sync(); err != nil {
			return err
		}
		target = merged
		err = repo.Advance(ctx, moved.Head, merged)
	}
	var switched *checkpoint.SwitchedError
	var changed *checkpoint.ChangedError
	switch {
	case errors.As(err, &changed):
		return &userGitError{msg: fmt.Sprintf("task %s is done but not merged: your uncommitted changes to %s are in files the task changed too: commit or stash them (`git stash`), then `planagent resume %s` merges it (the task's work is kept)",
			id, strings.Join(changed.Files, ", "), r.st.RunID)}
	case errors.As(err, &switched):
		return &userGitError{msg: fmt.Sprintf("task %s is done but not merged: %v; a run never writes to a checkout you switched: `git switch %s`, then `planagent resume %s` merges it (the task's work is kept)",
			id, switched, switchBack(switched.Branch, cp.Head), r.st.RunID)}
	case errors.As(err, &moved) && !moved.Ahead:
		return &userGitError{msg: fmt.Sprintf("task %s is done but not merged: %s is at %s, which does not hold the run's last checkpoint %s (reset or rewritten): put it back on top of %s, then `planagent resume %s` (the task's work is kept)",
			id, r.branchName(), shortID(moved.Head), shortID(cp.Head), shortID(cp.Head), r.st.RunID)}
	case err != nil:
		return err
	}
	cp.Head, info.Commit, info.Merging = target, target, ""
	return nil
}

// userGitError stops the run, resumably, where the user's own git work
// needs them first: the merge's target stays saved for resume.
type userGitError struct{ msg string }

func (e *userGitError) Error() string { return e.msg }

// note tells the operator something in one line.
func (r *run) note(text string) {
	r.o.opts.Logger.Info(text)
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID, Text: text})
}

// branchName is the run's branch as the user knows it.
func (r *run) branchName() string {
	if b := r.st.Checkpoints.Branch; b != "" {
		return "branch " + b
	}
	return "the detached HEAD"
}

// switchBack is what `git switch` takes to go back to branch (a detached
// HEAD: its commit).
func switchBack(branch, head string) string {
	if branch == "" {
		return "--detach " + shortID(head)
	}
	return branch
}

func shortID(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// forgetMerge drops an interrupted merge next gave up on.
func (r *run) forgetMerge(a next.ActForgetMerge) {
	r.o.opts.Logger.Warn("the branch moved during an interrupted merge; merging the task again", "task", a.ID, "head", a.Head)
	r.info(a.ID).Merging = ""
}

func (r *run) failpoint(name string) {
	if r.o.opts.Failpoint != nil {
		r.o.opts.Failpoint(name)
	}
}

// checkpointed records where a task that just completed left the
// integration state, for rollback.
func (r *run) checkpointed(info *runrecord.TaskInfo) {
	if !r.isolated() {
		return
	}
	cp := r.st.Checkpoints
	cp.Merges++
	info.Merge, info.Checkpoint = cp.Merges, cp.Head
}

// clearAttempts removes what is left of the run's copies once it ends.
func (r *run) clearAttempts(ctx context.Context) {
	if !r.isolated() {
		return
	}
	r.squashing.Wait() // a squash of a task the run no longer merges
	r.merges.Wait()    // an acceptance copy being recycled
	if err := r.o.opts.Repo.DropKeeps(context.WithoutCancel(ctx)); err != nil {
		r.o.opts.Logger.Warn("drop the run's keep refs", "err", err)
	}
	dir := r.o.opts.Layout.Attempts() + "/" + r.st.RunID
	if err := os.RemoveAll(dir); err != nil {
		r.o.opts.Logger.Warn("remove the run's attempt copies", "dir", dir, "err", err)
	}
	if err := r.o.opts.Repo.DrainPool(); err != nil {
		r.o.opts.Logger.Warn("remove the thrown-away attempt copies", "err", err)
	}
}
