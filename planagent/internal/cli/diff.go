package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// DiffOptions are the arguments of `planagent diff`.
type DiffOptions struct {
	Run, Task string
	Attempt   int // --attempt N: that attempt of Task (0: the task's merged result)
}

// NewCmdDiff builds `planagent diff`.
func NewCmdDiff(f *cmdutil.Factory, runF func(*cobra.Command, *DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff [RUN] [TASK]",
		Short: "Print what a run, or one of its tasks, changed (a git patch)",
		Long: `Print the patch of TASK's checkpoint (its one commit), or with no TASK the
whole run's: from the commit it started from to its last checkpoint. RUN
defaults to the latest run; a single argument that is not a run id is a task
of the latest run.

With --attempt N, the patch of attempt N of TASK: the merged attempt's
checkpoint, or for another attempt the result it left (kept as
refs/codeagent/RUN/TASK/attempt-N) against the state its copy was made
from. An attempt that ended without a result (it failed before its work
was squashed into a commit) is refused, saying how it ended.

On a terminal the patch is coloured and shown through a pager ($PAGER, else
less, with LESS=FRX as git sets it); piped or redirected it is plain.`,
		Example: `  planagent diff
  planagent diff add-tests
  planagent diff run-20261121-084500-1a2b add-tests | git apply --stat
  planagent diff run-20261121-084500-1a2b parser --attempt 2`,
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: completeRun(f, true, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 2:
				opts.Run, opts.Task = args[0], args[1]
			case 1:
				if strings.HasPrefix(args[0], "run-") {
					opts.Run = args[0]
				} else {
					opts.Task = args[0]
				}
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runDiff(cmd, f, opts)
		},
	}
	cmd.Flags().IntVar(&opts.Attempt, "attempt", 0, "with TASK: the patch of that attempt of the task against the state it started from, the merged one's or another's kept result (see status --json's attempt_results)")
	return cmd
}

func runDiff(cmd *cobra.Command, f *cmdutil.Factory, opts *DiffOptions) error {
	ctx := cmd.Context()
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, repo, err := s.runCheckpoints(ctx, opts.Run)
	if err != nil {
		return err
	}
	from, to := st.Checkpoints.Start, st.Checkpoints.Head
	if opts.Attempt != 0 {
		if opts.Task == "" {
			return cmdutil.UsageError(fmt.Errorf("--attempt %d needs a TASK: planagent diff %s TASK --attempt %d", opts.Attempt, st.RunID, opts.Attempt))
		}
		commit, err := attemptCommit(ctx, repo, st, opts.Task, opts.Attempt)
		if err != nil {
			return err
		}
		if commit != "" {
			// Against the state its copy was made from: what the attempt
			// did, whatever was merged since.
			from, to = commit+"^", commit
			opts.Task = ""
		}
	}
	if opts.Task != "" {
		in, ok := st.Info[opts.Task]
		t, known := taskOf(st, opts.Task)
		if !ok || !known {
			return cmdutil.UsageError(fmt.Errorf("run %s has no task %q (see `planagent status %s`)", st.RunID, opts.Task, st.RunID))
		}
		if t.Status != taskgraph.Completed {
			return cmdutil.UsageError(fmt.Errorf("task %s is %s: only a completed task has a checkpoint", opts.Task, t.Status))
		}
		if in.Commit == "" {
			fmt.Fprintf(f.IO.Err, "no changes: task %s completed without changing any file\n", opts.Task)
			return nil
		}
		from, to = in.Commit+"^", in.Commit
	}
	patch, err := repo.Diff(ctx, from, to)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if patch == "" {
		fmt.Fprintf(f.IO.Err, "no changes in run %s\n", st.RunID)
		return nil
	}
	return showPatch(ctx, f.IO, f.Getenv, patch)
}
