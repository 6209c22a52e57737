package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/review"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// pendingReview is the run's comments not yet sent to a follow-up task.
func (s *session) pendingReview(runID string) ([]review.Comment, error) {
	cs, err := review.Open(s.layout.Run(runID)).List()
	if err != nil {
		return nil, err
	}
	return review.Pending(cs), nil
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
