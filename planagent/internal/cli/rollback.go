package cli

import (
	"context"
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
	s, st, repo, j, release, err := openBranchMove(cmd, f, opts.Run, "", "roll it back (nothing was rolled back)")
	if err != nil {
		return err
	}
	defer release()
	if j != nil && j.Pick == 0 && j.Task == opts.To && (j.Task != "" || opts.Start) {
		reportRollback(f, s, st.RunID, j)
		return nil
	}
	cp := st.Checkpoints
	j = &runrecord.Rollback{}
	if opts.To != "" {
		t, ok := taskOf(st, opts.To)
		in := st.Info[opts.To]
		if !ok || in == nil {
			return cmdutil.UsageError(fmt.Errorf("run %s has no task %q (see `planagent status %s`)", st.RunID, opts.To, st.RunID))
		}
		if t.Status != taskgraph.Completed || in.Checkpoint == "" {
			return cmdutil.UsageError(fmt.Errorf("task %s is %s: only a completed task has a checkpoint to go back to", opts.To, t.Status))
		}
		j.To, j.Keep, j.Task = in.Checkpoint, in.Merge, opts.To
	} else {
		j.To = cp.Start
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	if head != cp.Head {
		return cmdutil.UsageError(fmt.Errorf("HEAD %s is not the run's last checkpoint %s: commits made since would be taken off the branch; move them elsewhere first", short(head), short(cp.Head)))
	}
	dirty, err := repo.Dirty(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return cmdutil.UsageError(changedError(repo, dirty, "nothing was rolled back"))
	}
	if err := repo.KeepForRollback(ctx, head); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	// The journal: the move and the run's state after it are saved, synced,
	// before the first file changes; the tasks it resets with it, so a
	// finished run that is rolled back is resumable from this moment.
	j.From = head
	j.Reset = resetAfter(st, j.Keep)
	if len(j.Reset) > 0 && st.Status.Finished() {
		st.Status = runrecord.RunInterrupted // resumable
	}
	cp.Rollback = j
	if err := st.Save(s.layout, time.Now()); err != nil {
		return err
	}
	if err := finishRollback(ctx, s, st, repo); err != nil {
		return err
	}
	reportRollback(f, s, st.RunID, j)
	return nil
}

// openBranchMove opens run for a command that moves its branch (rollback,
// pick): its state and checkpoints under the run's lock, the checkout on
// the run's branch, and a move of either command that was interrupted
// finished first (j: that move's journal, nil when there was none).
// busy is added to the error when another planagent drives the run; to
// says what the user would do on the run's branch. release frees the lock.
func openBranchMove(cmd *cobra.Command, f *cmdutil.Factory, run, busy, to string) (s *session, st *runrecord.State, repo *checkpoint.Repo, j *runrecord.Rollback, release func(), err error) {
	ctx := cmd.Context()
	if s, err = newSession(f, cmd); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if st, err = runrecord.LoadState(s.layout, run, false); err != nil {
		return nil, nil, nil, nil, nil, cmdutil.UsageError(err)
	}
	lock, err := runlock.Acquire(s.layout.Run(st.RunID))
	if err != nil {
		return nil, nil, nil, nil, nil, cmdutil.UsageError(fmt.Errorf("run %s: %w%s", st.RunID, err, busy))
	}
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	if st, repo, err = s.runCheckpoints(ctx, st.RunID); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if err = onRunBranch(st, repo, to); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if j, err = finishJournal(ctx, f, s, st, repo); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	return s, st, repo, j, lock.Release, nil
}

// onRunBranch refuses a git workspace no longer on the branch the run
// commits to; to says what switching back allows.
func onRunBranch(st *runrecord.State, repo *checkpoint.Repo, to string) error {
	b := st.Checkpoints.Branch
	if repo.Mode() != "git" || repo.Branch() == b {
		return nil
	}
	back := b
	if b == "" {
		back = "--detach " + short(st.Checkpoints.Head)
	}
	return cmdutil.UsageError(fmt.Errorf("run %s commits to %s, but the workspace is now on %s: switch back (`git switch %s`) to %s",
		st.RunID, branchName(b), branchName(repo.Branch()), back, to))
}

// finishJournal finishes a rollback or a pick cut short (kill -9, a full
// disk, a git that failed) before anything else is done, whatever is
// asked now; it returns that journal, nil when there was none.
func finishJournal(ctx context.Context, f *cmdutil.Factory, s *session, st *runrecord.State, repo *checkpoint.Repo) (*runrecord.Rollback, error) {
	j := st.Checkpoints.Rollback
	if j == nil {
		return nil, nil
	}
	what, _ := journalled(st.RunID, j)
	fmt.Fprintf(f.IO.Err, "finishing the %s that was interrupted (%s to %s)\n", what, short(j.From), short(j.To))
	return j, finishRollback(ctx, s, st, repo)
}

// finishRollback carries out the rollback journaled in st: git moves the
// workspace and the branch (Advance finishes a move cut short at any
// point: files git already wrote are taken as the move's own), then the
// state records the new head and drops the journal.
func finishRollback(ctx context.Context, s *session, st *runrecord.State, repo *checkpoint.Repo) error {
	cp := st.Checkpoints
	j := cp.Rollback
	what, again := journalled(st.RunID, j)
	if err := repo.Advance(ctx, j.From, j.To); err != nil {
		var changed *checkpoint.ChangedError
		if errors.As(err, &changed) {
			return cmdutil.UsageError(changedError(repo, changed.Files, fmt.Sprintf("the %s waits: run %s again after", what, again)))
		}
		var moved *checkpoint.MovedError
		if errors.As(err, &moved) {
			return cmdutil.UsageError(fmt.Errorf("HEAD %s is neither where the interrupted %s began (%s) nor its target (%s): move your commits elsewhere and put the branch back at one of them, then run %s again",
				short(moved.Head), what, short(j.From), short(j.To), again))
		}
		var switched *checkpoint.SwitchedError
		if errors.As(err, &switched) {
			return cmdutil.UsageError(fmt.Errorf("%w: switch back, then run %s again", switched, again))
		}
		if lock := repo.StaleLock(); lock != "" {
			return cmdutil.UsageError(fmt.Errorf("%s to %s: git's lock %s is there: a git command was killed mid-write (or one is running now); once none runs in this repository, remove it and run %s again (%w)", what, short(j.To), lock, again, err))
		}
		return fmt.Errorf("%s to %s (run %s again to finish it): %w", what, short(j.To), again, err)
	}
	cp.Head = j.To
	if cp.Merges > j.Keep {
		cp.Merges = j.Keep
	}
	cp.Rollback = nil
	return st.Save(s.layout, time.Now())
}

// journalled names the move a journal is (a rollback or a pick) and the
// command that finishes it.
func journalled(runID string, j *runrecord.Rollback) (what, again string) {
	if j.Pick > 0 {
		return "pick", fmt.Sprintf("`planagent pick %s %s --attempt %d`", runID, j.Task, j.Pick)
	}
	return "rollback", "the same `planagent rollback`"
}

// changedError names the workspace files a rollback will not write over.
func changedError(repo *checkpoint.Repo, files []string, outcome string) error {
	fix := "stash them (`git stash -u`) or revert them first"
	if repo.Mode() != "git" {
		fix = "undo them, or move the files elsewhere, first"
	}
	return fmt.Errorf("the workspace has changes since the run's last checkpoint: %s; %s (%s)", strings.Join(files, ", "), fix, outcome)
}

// reportRollback says where the rollback went and what is pending again.
func reportRollback(f *cmdutil.Factory, s *session, runID string, j *runrecord.Rollback) {
	what := "where the run began"
	if j.Task != "" {
		what = "the checkpoint after " + j.Task
	}
	fmt.Fprintf(f.IO.Out, "rolled back to %s (%s)\n", what, short(j.To))
	if len(j.Reset) > 0 {
		fmt.Fprintf(f.IO.Out, "pending again: %s\nredo them with `planagent resume %s`\n", strings.Join(j.Reset, ", "), s.ref(runID))
	}
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
