package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// RollbackOptions are the arguments of `planagent rollback`.
type RollbackOptions struct {
	Run   string
	To    string
	Start bool
}

// NewCmdRollback builds `planagent rollback`.
func NewCmdRollback(f *cmdutil.Factory, runF func(*cobra.Command, *RollbackOptions) error) *cobra.Command {
	opts := &RollbackOptions{}
	cmd := &cobra.Command{
		Use:   "rollback [RUN] (--to TASK | --start)",
		Short: "Put the workspace back to a task's checkpoint, or to where the run began",
		Long: `Move the workspace (and the branch the run commits to) back to the checkpoint
right after TASK completed, or with --start to the commit the run started
from. The tasks completed after that point become pending again, and
` + "`planagent resume`" + ` redoes them.

It refuses, exit 2, when the workspace has changes that are not committed,
or when commits were added on top of the run's: they would be lost. The
commits it takes off the branch stay in the repository under
refs/codeagent/rollback/.`,
		Example: `  planagent rollback --to add-parser
  planagent rollback run-20261121-084500-1a2b --start`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if (opts.To == "") == !opts.Start {
				return cmdutil.UsageError(errors.New("say where to go back to: --to TASK or --start"))
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runRollback(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.To, "to", "", "the task whose checkpoint to go back to")
	cmd.Flags().BoolVar(&opts.Start, "start", false, "go back to where the run began")
	_ = cmd.RegisterFlagCompletionFunc("to", completeTaskFlag(f))
	return cmd
}

func runRollback(cmd *cobra.Command, f *cmdutil.Factory, opts *RollbackOptions) error {
	ctx := cmd.Context()
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	st, err := runrecord.LoadState(s.layout, opts.Run, false)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	lock, err := runlock.Acquire(s.layout.Run(st.RunID))
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
	}
	defer lock.Release()
	st, repo, err := s.runCheckpoints(ctx, st.RunID)
	if err != nil {
		return err
	}
	cp := st.Checkpoints
	target, keep, what := cp.Start, 0, "where the run began"
	if opts.To != "" {
		t, ok := taskOf(st, opts.To)
		in := st.Info[opts.To]
		if !ok || in == nil {
			return cmdutil.UsageError(fmt.Errorf("run %s has no task %q (see `planagent status %s`)", st.RunID, opts.To, st.RunID))
		}
		if t.Status != taskgraph.Completed || in.Checkpoint == "" {
			return cmdutil.UsageError(fmt.Errorf("task %s is %s: only a completed task has a checkpoint to go back to", opts.To, t.Status))
		}
		target, keep, what = in.Checkpoint, in.Merge, "the checkpoint after "+opts.To
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	if head != cp.Head {
		return cmdutil.UsageError(fmt.Errorf("HEAD %s is not the run's last checkpoint %s: commits made since would be taken off the branch; move them elsewhere first", short(head), short(cp.Head)))
	}
	if err := repo.Rollback(ctx, target); err != nil {
		var changed *checkpoint.ChangedError
		if errors.As(err, &changed) {
			fix := "stash them (`git stash -u`) or revert them first"
			if repo.Mode() != "git" {
				fix = "undo them, or move the files elsewhere, first"
			}
			return cmdutil.UsageError(fmt.Errorf("the workspace has changes since the run's last checkpoint: %s; %s (nothing was rolled back)", strings.Join(changed.Files, ", "), fix))
		}
		return fmt.Errorf("rollback: %w", err)
	}
	reset := resetAfter(st, keep)
	cp.Head = target
	if cp.Merges > keep {
		cp.Merges = keep
	}
	if len(reset) > 0 && st.Status.Finished() {
		st.Status = runrecord.RunInterrupted // resumable
	}
	if err := st.Save(s.layout, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "rolled back to %s (%s)\n", what, short(target))
	if len(reset) > 0 {
		fmt.Fprintf(f.IO.Out, "pending again: %s\nredo them with `planagent resume %s`\n", strings.Join(reset, ", "), s.ref(st.RunID))
	}
	return nil
}

// resetAfter makes every task that is not completed at or before the
// checkpoint numbered keep pending again and returns those that had been
// completed or tried.
func resetAfter(st *runrecord.State, keep int) []string {
	var reset []string
	for i := range st.Tasks {
		t := &st.Tasks[i]
		in := st.Info[t.ID]
		if in == nil {
			in = &runrecord.TaskInfo{}
			st.Info[t.ID] = in
		}
		if t.Status == taskgraph.Completed && in.Merge > 0 && in.Merge <= keep {
			continue
		}
		if t.Status != taskgraph.Pending || t.Attempts > 0 {
			reset = append(reset, t.ID)
		}
		// Attempts count on, so the redone attempt gets a copy, a session and
		// an archived report of its own.
		t.Status, t.Result, t.Error, t.SkippedBy = taskgraph.Pending, "", "", ""
		in.Commit, in.Checkpoint, in.Merge, in.Base, in.Merging, in.Hints = "", "", 0, "", "", nil
		in.History = append(in.History, "rolled back")
	}
	return reset
}
