package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/jsonout"
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
		return jsonout.Write(f.IO.Out, cs)
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
