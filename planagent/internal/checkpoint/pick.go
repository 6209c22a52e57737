package checkpoint

import (
	"context"
	"fmt"
)

// AttemptCommit is the squashed result attempt n of task left under its
// ref (AttemptRef), "" when there is none: the attempt ended without a
// result, or it is the one merged (its result is the task's commit).
func (r *Repo) AttemptCommit(ctx context.Context, run, task string, n int) (string, error) {
	ref := AttemptRef(run, task, n)
	out, err := r.g.run(ctx, "for-each-ref", "--format=%(objectname)", ref)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", ref, err)
	}
	if out == "" {
		return "", nil
	}
	// Peeled by the long-lived cat-file, as rev-parse would.
	o, err := r.cat.get(ref + "^{commit}")
	if err != nil {
		return "", fmt.Errorf("read %s: %w", ref, err)
	}
	if o.missing || o.typ != "commit" {
		return "", fmt.Errorf("%s does not name a commit", ref)
	}
	return o.id, nil
}

// Replay makes commit (an attempt's squashed result: one commit on top
// of the state its copy was made from) into one commit on top of onto,
// the way a task's merge does (Apply): commit itself when onto is its
// parent. The result waits with the pending objects until a move to it
// (Advance). A ConflictError names the files that cannot be merged.
func (r *Repo) Replay(ctx context.Context, commit, onto string) (string, error) {
	base, err := r.store.firstParent(commit)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", short(commit), err)
	}
	if base == "" {
		return "", fmt.Errorf("%s is not an attempt's result: it has no parent", short(commit))
	}
	return r.Apply(ctx, "", base, commit, onto)
}

// Parent is commit's first parent ("" for a root commit).
func (r *Repo) Parent(commit string) (string, error) { return r.store.firstParent(commit) }

// Changed lists the paths that differ between two commits.
func (r *Repo) Changed(ctx context.Context, from, to string) ([]string, error) {
	out, err := r.g.run(ctx, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", from, to)
	if err != nil {
		return nil, fmt.Errorf("list the files %s changes from %s: %w", short(to), short(from), err)
	}
	return splitZ(out), nil
}
