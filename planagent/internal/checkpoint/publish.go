package checkpoint

import (
	"context"
	"fmt"
)

// Publisher puts a run's commits on a branch of the user's repository and
// pushes it: all `planagent publish` needs of the checkpoints, with the
// user's own git setup.
type Publisher struct {
	g      git
	branch string // the branch the run commits to (refs/heads/…), never published over
}

// Publisher is the publisher of the repository's branches.
func (r *Repo) Publisher() *Publisher { return &Publisher{g: r.g, branch: r.branch} }

// SetBranch points the branch name at commit: made when missing, moved
// when commit is ahead of it (a run published again after more tasks),
// refused when it holds commits commit does not (someone else's work).
func (p *Publisher) SetBranch(ctx context.Context, name, commit string) error {
	if _, err := p.g.run(ctx, "check-ref-format", "--branch", name); err != nil {
		return fmt.Errorf("%q is not a valid branch name", name)
	}
	ref := "refs/heads/" + name
	if ref == p.branch {
		return fmt.Errorf("%s is the branch the run commits to: publish under another name", name)
	}
	old, err := p.g.line(ctx, "rev-parse", "-q", "--verify", ref)
	if err == nil && old != commit && !p.isAncestor(ctx, old, commit) {
		return fmt.Errorf("the branch %s exists and holds commits the run does not (at %s): choose another name with --branch", name, short(old))
	}
	_, err = p.g.run(ctx, "update-ref", "-m", "codeagent: publish", ref, commit)
	return err
}

// RemoteURL is the URL of remote, "" when the repository has no such remote.
func (p *Publisher) RemoteURL(ctx context.Context, remote string) string {
	u, err := p.g.line(ctx, "remote", "get-url", remote)
	if err != nil {
		return ""
	}
	return u
}

// Push pushes the branch name to remote under the same name, with the
// user's own git setup (credentials, ssh): this is the user's command.
func (p *Publisher) Push(ctx context.Context, remote, name string) error {
	ref := "refs/heads/" + name
	if _, err := p.g.run(ctx, "push", "--porcelain", remote, ref+":"+ref); err != nil {
		return fmt.Errorf("push %s to %s: %w", name, remote, err)
	}
	return nil
}

// isAncestor reports whether a is an ancestor of b.
func (p *Publisher) isAncestor(ctx context.Context, a, b string) bool {
	_, err := p.g.run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}
