package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// AttemptRef is the ref that keeps the squashed result of attempt n of task
// in run once the run chose another attempt (or none) for the task: the
// losers stay inspectable (planagent diff --attempt, pick) after their
// copies are gone. Run and task ids are protocol ids, valid in a ref name.
func AttemptRef(run, task string, n int) string {
	return fmt.Sprintf("refs/codeagent/%s/%s/attempt-%d", run, task, n)
}

// KeepAttempt points AttemptRef(run, task, n) at commit, an attempt's
// squash the run does not merge (or no longer: `planagent pick` replaced
// it). The squash's objects wait in the
// pending directory, which DrainPool empties at the run's end: a ref to
// them there would break then. So what commit reaches that no ref of the
// repository does is first written into the repository as a pack of its
// own (copied, not moved: a merge of the same squash may still need them
// pending, and its move takes them from there). A ref already at commit
// (a resume keeping it again) is left as it is.
func (r *Repo) KeepAttempt(ctx context.Context, run, task string, n int, commit string) error {
	ref := AttemptRef(run, task, n)
	// Read by the long-lived cat-file, which resolves a ref as rev-parse
	// does (a name git refuses names nothing; update-ref below refuses it).
	if at, err := r.cat.get(ref + "^{commit}"); err != nil {
		return fmt.Errorf("keep attempt %d of task %s: read %s: %w", n, task, ref, err)
	} else if !at.missing && at.id == commit {
		return nil
	}
	if err := r.admitReachable(ctx, commit); err != nil {
		return fmt.Errorf("keep attempt %d of task %s: write its objects into the repository: %w", n, task, err)
	}
	// Not cut short: a killed update-ref leaves its lock, and the next
	// keep of this attempt (a resume) would fail on it.
	if _, err := r.g.run(context.WithoutCancel(ctx), "update-ref", "-m", "codeagent: attempt kept", ref, commit); err != nil {
		return fmt.Errorf("keep attempt %d of task %s as %s: %w", n, task, ref, err)
	}
	return nil
}

// admitReachable writes into the repository's objects a pack of what
// commit reaches that no ref does (read through the pending directory).
func (r *Repo) admitReachable(ctx context.Context, commit string) error {
	list, err := r.g.run(ctx, "rev-list", "--objects", commit, "--not", "--all")
	if err != nil {
		return err
	}
	if strings.TrimSpace(list) == "" {
		return nil // every object is reachable from a ref already
	}
	// pack-objects writes the pack, then its index, under temporary names
	// renamed into place: git never sees a pack without its index.
	_, err = r.g.runIn(ctx, []byte(list), "pack-objects", "-q", filepath.Join(r.objectsDir, "pack", "pack"))
	return err
}
