package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/publish"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// PublishOptions are the arguments of `planagent publish`.
type PublishOptions struct {
	Run, Branch, Remote, Base, Repo, Title string
	PR, NoPush                             bool
}

// NewCmdPublish builds `planagent publish`.
func NewCmdPublish(f *cmdutil.Factory, runF func(*cobra.Command, *PublishOptions) error) *cobra.Command {
	opts := &PublishOptions{}
	cmd := &cobra.Command{
		Use:   "publish [RUN] --branch NAME",
		Short: "Put a run's commits on a branch, push it, and open a pull request (--pr)",
		Long: `Point the branch NAME at the run's last checkpoint (the run's commits on top
of the commit it started from), push it to the remote (--remote, default
origin) and, with --pr, open a pull request from it into the branch the run
committed to (--base to change), with the run's summary as its body: the
goal, each task's status, attempts, tokens and cost. GitHub: through the gh
CLI when it is installed and logged in, else the REST API with GITHUB_TOKEN
(or GH_TOKEN; GITHUB_API_URL for GitHub Enterprise). Nothing is pushed
without this command. Needs a run in a git repository (not a shadow one).`,
		Example: `  planagent publish --branch codeagent/add-healthz
  planagent publish run-20261121-084500-1a2b --branch codeagent/healthz --pr
  planagent publish --branch try --no-push`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runPublish(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Branch, "branch", "", "the branch to put the run's commits on (required)")
	cmd.Flags().StringVar(&opts.Remote, "remote", "origin", "the remote to push to")
	cmd.Flags().BoolVar(&opts.PR, "pr", false, "open a pull request from the branch (GitHub)")
	cmd.Flags().StringVar(&opts.Base, "base", "", "the pull request's base branch (default: the branch the run committed to)")
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "the GitHub repository OWNER/NAME (default: from the remote's URL)")
	cmd.Flags().StringVar(&opts.Title, "title", "", "the pull request's title (default: the plan's title or the goal)")
	cmd.Flags().BoolVar(&opts.NoPush, "no-push", false, "only make the branch")
	return cmd
}

func runPublish(cmd *cobra.Command, f *cmdutil.Factory, opts *PublishOptions) error {
	ctx := cmd.Context()
	if opts.Branch == "" {
		return cmdutil.UsageError(fmt.Errorf("--branch is required: the name of the branch to put the run's commits on"))
	}
	if opts.PR && opts.NoPush {
		return cmdutil.UsageError(fmt.Errorf("--pr needs the branch pushed: drop --no-push"))
	}
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, repo, err := s.runCheckpoints(ctx, opts.Run)
	if err != nil {
		return err
	}
	cp := st.Checkpoints
	if cp.Mode != "git" {
		return cmdutil.UsageError(fmt.Errorf("run %s keeps its checkpoints in a shadow repository (the workspace is not a git repository): there is nothing to push; `planagent diff %s` gives the patch", st.RunID, st.RunID))
	}
	if cp.Head == cp.Start {
		return cmdutil.UsageError(fmt.Errorf("run %s has no commit yet: nothing to publish", st.RunID))
	}
	pub := repo.Publisher()
	if err := pub.SetBranch(ctx, opts.Branch, cp.Head); err != nil {
		return cmdutil.UsageError(err)
	}
	n := 0
	for _, t := range st.Tasks {
		if in := st.Info[t.ID]; t.Status == taskgraph.Completed && in != nil && in.Commit != "" {
			n++
		}
	}
	fmt.Fprintf(f.IO.Err, "branch %s: the run's %d commits on %s (%s)\n", opts.Branch, n, short(cp.Start), short(cp.Head))
	if opts.NoPush {
		return nil
	}
	remoteURL := pub.RemoteURL(ctx, opts.Remote)
	if remoteURL == "" {
		return cmdutil.UsageError(fmt.Errorf("the repository has no remote %q: add one (git remote add %s URL) or name another with --remote", opts.Remote, opts.Remote))
	}
	if err := pub.Push(ctx, opts.Remote, opts.Branch); err != nil {
		return cmdutil.Failed(err)
	}
	fmt.Fprintf(f.IO.Err, "pushed %s to %s\n", opts.Branch, opts.Remote)
	if !opts.PR {
		return nil
	}
	pr := publish.PullRequest{Repo: opts.Repo, Head: opts.Branch, Base: opts.Base, Title: opts.Title}
	if pr.Repo == "" {
		if pr.Repo = publish.RepoOf(remoteURL); pr.Repo == "" {
			return cmdutil.UsageError(fmt.Errorf("the remote %s (%s) is not on github.com: name the repository with --repo OWNER/NAME", opts.Remote, remoteURL))
		}
	}
	if pr.Base == "" {
		if pr.Base = cp.Branch; pr.Base == "" {
			return cmdutil.UsageError(fmt.Errorf("the run committed to a detached HEAD: name the pull request's base with --base"))
		}
	}
	if pr.Title == "" {
		pr.Title = st.Goal
		if st.Plan != nil && strings.TrimSpace(st.Plan.Title) != "" {
			pr.Title = st.Plan.Title
		}
	}
	pr.Body = runview.Markdown(runview.Build(st, s.viewOptions())) +
		"\n---\nMade by CodeAgent (`planagent publish`); each commit is one task.\n"
	url, via, err := (publish.GitHub{Getenv: os.Getenv}).Open(ctx, pr)
	if err != nil {
		if errors.Is(err, publish.ErrNoWay) {
			return cmdutil.UsageError(err)
		}
		return cmdutil.Failed(err)
	}
	fmt.Fprintf(f.IO.Err, "pull request (%s): %s\n", via, url)
	fmt.Fprintln(f.IO.Out, url)
	return nil
}
