package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/review"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// NewCmdComment builds `planagent comment`.
func NewCmdComment(f *cmdutil.Factory, runF func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "comment RUN TASK FILE:LINE TEXT",
		Short: "Leave a review comment on a line of a task's change",
		Long: `Leave a comment on line LINE of FILE in the change of TASK (see planagent diff
RUN TASK). planagent resume RUN then turns a task's comments into a follow-up
task ("address the review of TASK", the comments and the diff as its
context, depending on TASK), carried out, accepted and committed like any
other. planagent review RUN lists the comments.`,
		Example: `  planagent comment run-20261121-084500-1a2b handler main.go:42 "return 404, not 500, when the id is unknown"
  planagent resume run-20261121-084500-1a2b`,
		Args:              cobra.ExactArgs(4),
		ValidArgsFunction: completeRun(f, true, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd, args)
			}
			return runComment(cmd, f, args)
		},
	}
}

func runComment(cmd *cobra.Command, f *cmdutil.Factory, args []string) error {
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, err := runrecord.LoadState(s.layout, args[0], false)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	t, ok := taskOf(st, args[1])
	if !ok {
		return cmdutil.UsageError(fmt.Errorf("run %s has no task %q (see `planagent status %s`)", st.RunID, args[1], st.RunID))
	}
	if t.Status != taskgraph.Completed {
		return cmdutil.UsageError(fmt.Errorf("task %s is %s: only a completed task's change can be reviewed", t.ID, t.Status))
	}
	file, line, err := review.ParseWhere(args[2])
	if err != nil {
		return cmdutil.UsageError(err)
	}
	// A comment is on the task's change: a file the task did not change
	// would give its follow-up nothing of the change to work from.
	if in := st.Info[t.ID]; in != nil && len(in.FilesChanged) > 0 && !slices.Contains(in.FilesChanged, file) {
		return cmdutil.UsageError(fmt.Errorf("task %s did not change %s: comment on one of its files (%s; see `planagent diff %s %s`)",
			t.ID, file, strings.Join(in.FilesChanged, ", "), s.ref(st.RunID), t.ID))
	}
	c, err := review.Open(s.layout.Run(st.RunID)).Add(review.Comment{Task: t.ID, File: file, Line: line, Text: args[3]})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	fmt.Fprintf(f.IO.Err, "comment %d on %s %s saved; `planagent resume %s` turns the comments into a follow-up task\n", c.ID, t.ID, c.Where(), s.ref(st.RunID))
	return nil
}
