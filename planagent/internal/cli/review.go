package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/review"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// NewCmdReview builds `planagent review`.
func NewCmdReview(f *cmdutil.Factory, runF func(*cobra.Command, string, bool) error) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:               "review [RUN] [--json]",
		Short:             "List the review comments of a run, and what became of them",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			run := ""
			if len(args) == 1 {
				run = args[0]
			}
			if runF != nil {
				return runF(cmd, run, jsonOut)
			}
			return runReview(cmd, f, run, jsonOut)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the comments as a JSON array")
	return cmd
}

func runReview(cmd *cobra.Command, f *cmdutil.Factory, runID string, jsonOut bool) error {
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, err := runrecord.LoadState(s.layout, runID, false)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	cs, err := review.Open(s.layout.Run(st.RunID)).List()
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if jsonOut {
		if cs == nil {
			cs = []review.Comment{}
		}
		return cmdutil.WriteJSON(f.IO.Out, cs)
	}
	if len(cs) == 0 {
		fmt.Fprintf(f.IO.Out, "run %s has no review comments (planagent comment %s TASK FILE:LINE TEXT)\n", st.RunID, st.RunID)
		return nil
	}
	writeComments(f.IO.Out, cs)
	return nil
}

func writeComments(w io.Writer, cs []review.Comment) {
	for _, c := range cs {
		state := "pending"
		if c.FollowUp != "" {
			state = "sent to " + c.FollowUp
		}
		fmt.Fprintf(w, "%d  %s  %s  %s  (%s)\n", c.ID, c.Task, c.Where(), strings.TrimSpace(c.Text), state)
	}
}

// pendingReview is the run's comments not yet sent to a follow-up task.
func (s *session) pendingReview(runID string) ([]review.Comment, error) {
	cs, err := review.Open(s.layout.Run(runID)).List()
	if err != nil {
		return nil, err
	}
	return review.Pending(cs), nil
}

// resumableState is the run resume drives: RUN, or the latest unfinished
// run, or else the latest run when it has review comments waiting (or any
// latest run with --retry-failed).
func (s *session) resumableState(runID string, retryFailed bool) (*runrecord.State, error) {
	st, err := runrecord.LoadState(s.layout, runID, runID == "" && !retryFailed)
	if err == nil || runID != "" || !errors.Is(err, runrecord.ErrNoRun) {
		return st, err
	}
	last, lerr := runrecord.LoadState(s.layout, "", false)
	if lerr != nil {
		return nil, err
	}
	if p, perr := s.pendingReview(last.RunID); perr == nil && len(p) > 0 {
		return last, nil
	}
	if last.Status == runrecord.RunFailed || last.Status == runrecord.RunAborted {
		return nil, fmt.Errorf("%w; the latest run %s %s: try its failed tasks again with `planagent resume %s --retry-failed`", err, last.RunID, last.Status, last.RunID)
	}
	return nil, err
}

// addFollowUps turns the run's pending comments into follow-up tasks, one
// per task reviewed (review.Send), and says so.
func (s *session) addFollowUps(ctx context.Context, st *runrecord.State, repo *checkpoint.Repo, pending []review.Comment, w io.Writer) error {
	sent, err := review.Send(s.layout, st, pending, func(commit string) string {
		if repo == nil {
			return ""
		}
		d, _ := repo.Diff(ctx, commit+"^", commit)
		return d
	})
	for _, x := range sent {
		fmt.Fprintf(w, "review: %d comment(s) on %s become the task %s\n", x.Comments, x.Task, x.FollowUp)
	}
	return err
}
