package checkpoint

import (
	"context"
	"fmt"
)

// SetBranch points the branch name at commit: made when missing, moved
// when commit is ahead of it (a run published again after more tasks),
// refused when it holds commits commit does not (someone else's work).
func (r *Repo) SetBranch(ctx context.Context, name, commit string) error {
	if _, err := r.g.run(ctx, "check-ref-format", "--branch", name); err != nil {
		return fmt.Errorf("%q is not a valid branch name", name)
	}
	ref := "refs/heads/" + name
	if ref == r.branch {
		return fmt.Errorf("%s is the branch the run commits to: publish under another name", name)
	}
	old, err := r.g.line(ctx, "rev-parse", "-q", "--verify", ref)
	if err == nil && old != commit && !r.IsAncestor(ctx, old, commit) {
		return fmt.Errorf("the branch %s exists and holds commits the run does not (at %s): choose another name with --branch", name, short(old))
	}
	_, err = r.g.run(ctx, "update-ref", "-m", "codeagent: publish", ref, commit)
	return err
}

// RemoteURL is the URL of remote, "" when the repository has no such remote.
func (r *Repo) RemoteURL(ctx context.Context, remote string) string {
	u, err := r.g.line(ctx, "remote", "get-url", remote)
	if err != nil {
		return ""
	}
	return u
}

// Push pushes the branch name to remote under the same name, with the
// user's own git setup (credentials, ssh): this is the user's command.
func (r *Repo) Push(ctx context.Context, remote, name string) error {
	ref := "refs/heads/" + name
	if _, err := r.g.run(ctx, "push", "--porcelain", remote, ref+":"+ref); err != nil {
		return fmt.Errorf("push %s to %s: %w", name, remote, err)
	}
	return nil
}
