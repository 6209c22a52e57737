package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/attempts"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// PickOptions are the arguments of `planagent pick`.
type PickOptions struct {
	Run, Task string
	Attempt   int
}

// NewCmdPick builds `planagent pick`.
func NewCmdPick(f *cmdutil.Factory, runF func(*cobra.Command, *PickOptions) error) *cobra.Command {
	opts := &PickOptions{}
	cmd := &cobra.Command{
		Use:   "pick [RUN] TASK --attempt N",
		Short: "Merge another passing attempt of a task in place of the one the run merged",
		Long: `Replace TASK's merged attempt with attempt N, another of its attempts that
passed its acceptance commands: the task's commit on the run's branch becomes
attempt N's result, on the same parent, merged the way the run merges a task.
The attempt it replaces stays in the repository as
refs/codeagent/RUN/TASK/attempt-M, like the attempts the run did not merge.
RUN defaults to the latest run.

It refuses, exit 2, saying why, when the run's later tasks have built on the
task's result (merged after it, or in progress on a copy of it): roll back
to the task first (` + "`planagent rollback RUN --to TASK`" + `), pick, then
` + "`planagent resume RUN`" + ` redoes them. It also refuses while a planagent drives
the run, when the workspace has changes in the files the pick would write,
or when commits were added on top of the run's. Other uncommitted work is
left as it is.`,
		Example: `  planagent pick parser --attempt 3
  planagent pick run-20261121-084500-1a2b parser --attempt 2`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRun(f, true, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				opts.Run, opts.Task = args[0], args[1]
			} else {
				opts.Task = args[0]
			}
			if opts.Attempt < 1 {
				return cmdutil.UsageError(errors.New("say which attempt to merge: --attempt N (see `planagent status RUN --json`, attempt_results)"))
			}
			if runF != nil {
				return runF(cmd, opts)
			}
			return runPick(cmd, f, opts)
		},
	}
	cmd.Flags().IntVar(&opts.Attempt, "attempt", 0, "the attempt of TASK to merge (one that passed its acceptance)")
	return cmd
}

// picking is a pick that passed its checks: what moves where.
type picking struct {
	task          string
	in            *runrecord.TaskInfo
	picked, was   *runrecord.AttemptResult // was: nil when no attempt ranked 1
	from, to, old string                   // the branch's move; old: the task's commit replaced ("" when it had none)
}

func runPick(cmd *cobra.Command, f *cmdutil.Factory, opts *PickOptions) error {
	ctx := cmd.Context()
	// Its copies and merges are made from the branch as it is now: a pick
	// waits until no planagent drives the run.
	s, st, repo, j, release, err := openBranchMove(cmd, f, opts.Run, "; a pick waits until no planagent drives the run", "pick there (nothing was picked)")
	if err != nil {
		return err
	}
	defer release()
	if j != nil && j.Pick == opts.Attempt && j.Task == opts.Task {
		reportPick(f, st, opts.Task, j)
		return nil
	}
	p, err := checkPick(ctx, st, repo, opts.Task, opts.Attempt)
	if err != nil {
		return err
	}
	if p == nil {
		fmt.Fprintf(f.IO.Err, "attempt %d is task %s's merged attempt already: nothing changed\n", opts.Attempt, opts.Task)
		return nil
	}
	// The replaced result is kept before the branch leaves it, as the
	// attempts the run did not merge are.
	if p.old != "" {
		if p.was != nil {
			err = repo.KeepAttempt(ctx, st.RunID, p.task, p.was.Attempt, p.old)
		} else {
			err = repo.KeepForRollback(ctx, p.old)
		}
		if err != nil {
			return fmt.Errorf("pick: %w", err)
		}
	}
	if j, err = recordPick(st, p, time.Now()); err != nil {
		return err
	}
	// The journal: the task's new commit and ranks, the move, saved before
	// the first file changes (rollback's journal, finished the same way by
	// the next pick, rollback or resume).
	if err := st.Save(s.layout, time.Now()); err != nil {
		return err
	}
	if fp := failpoint(); fp != nil {
		fp("pick-journaled")
	}
	if err := finishRollback(ctx, s, st, repo); err != nil {
		return err
	}
	s.sink(false).Emit(events.Event{Type: events.Decision, RunID: st.RunID, TaskID: p.task, Status: "pick",
		Text: st.Decisions[len(st.Decisions)-1].Reason})
	reportPick(f, st, p.task, j)
	return nil
}

// checkPick checks that attempt n of task can replace the task's merged
// attempt now, and works out the move; nil (and no error) when it is the
// merged attempt already. Every refusal is exit 2 with one line: why, and
// what to do.
func checkPick(ctx context.Context, st *runrecord.State, repo *checkpoint.Repo, task string, n int) (*picking, error) {
	t, ok := taskOf(st, task)
	in := st.Info[task]
	if !ok || in == nil {
		return nil, cmdutil.UsageError(fmt.Errorf("run %s has no task %q (see `planagent status %s`)", st.RunID, task, st.RunID))
	}
	if t.Status != taskgraph.Completed || in.Checkpoint == "" {
		return nil, cmdutil.UsageError(fmt.Errorf("task %s is %s: only a completed task's merged attempt can be replaced", task, t.Status))
	}
	r := resultOf(in, n)
	if r == nil {
		return nil, cmdutil.UsageError(noAttempt(in, task, n))
	}
	if r.Rank == 1 {
		return nil, nil
	}
	if r.Rank == 0 {
		return nil, cmdutil.UsageError(fmt.Errorf("attempt %d of task %s did not pass its acceptance (%s): only an attempt that passed can be merged", n, task, endedAs(r)))
	}
	cp := st.Checkpoints
	if after := mergedAfter(st, in.Merge); len(after) > 0 || cp.Head != in.Checkpoint {
		return nil, cmdutil.UsageError(fmt.Errorf("task %s's result is built on already (%s merged after it): roll back to it first (`planagent rollback %s --to %s` makes them pending again), pick, then `planagent resume %s` redoes them on the attempt picked",
			task, orAny(after, "commits"), st.RunID, task, st.RunID))
	}
	if on := builtOn(st, in.Checkpoint); len(on) > 0 {
		return nil, cmdutil.UsageError(fmt.Errorf("task %s's result is built on already (%s in progress on a copy of it): `planagent rollback %s --to %s` makes them pending again (their attempts start over on the attempt picked), then pick, then `planagent resume %s`",
			task, strings.Join(on, ", "), st.RunID, task, st.RunID))
	}
	attempt, err := repo.AttemptCommit(ctx, st.RunID, task, n)
	if err != nil {
		return nil, fmt.Errorf("pick: %w", err)
	}
	if attempt == "" {
		return nil, cmdutil.UsageError(fmt.Errorf("attempt %d of task %s passed, but its result is not in the repository (no %s): there is nothing to merge", n, task, checkpoint.AttemptRef(st.RunID, task, n)))
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head != cp.Head {
		return nil, cmdutil.UsageError(fmt.Errorf("HEAD %s is not the run's last checkpoint %s: commits made since would be taken off the branch; move them elsewhere first (nothing was picked)", short(head), short(cp.Head)))
	}
	// The task's commit is replaced on its own parent; a task that changed
	// nothing has none, and the attempt's result goes on its checkpoint.
	onto := in.Checkpoint
	if in.Commit != "" {
		if onto, err = repo.Parent(in.Commit); err != nil {
			return nil, fmt.Errorf("pick: %w", err)
		}
	}
	to, err := repo.Replay(ctx, attempt, onto)
	if err != nil {
		var conflict *checkpoint.ConflictError
		if errors.As(err, &conflict) {
			return nil, cmdutil.UsageError(fmt.Errorf("attempt %d of task %s does not merge onto the state the task's result is on (%w): roll back to before the task and resume instead", n, task, conflict))
		}
		return nil, fmt.Errorf("pick: merge attempt %d: %w", n, err)
	}
	// The user's own changes the move would write over refuse it before
	// anything is journalled; the rest stays as it is (git's two-tree move
	// carries it over, and refuses too).
	dirty, err := repo.Dirty(ctx)
	if err != nil {
		return nil, err
	}
	if len(dirty) > 0 {
		moved, err := repo.Changed(ctx, head, to)
		if err != nil {
			return nil, fmt.Errorf("pick: %w", err)
		}
		if in := inBoth(dirty, moved); len(in) > 0 {
			return nil, cmdutil.UsageError(changedError(repo, in, "nothing was picked"))
		}
	}
	var was *runrecord.AttemptResult
	for i := range in.Results {
		if in.Results[i].Rank == 1 {
			was = &in.Results[i]
		}
	}
	return &picking{task: task, in: in, picked: r, was: was, from: head, to: to, old: in.Commit}, nil
}

// recordPick puts the pick into the run's state: the task's new commit,
// the ranks swapped, a line of history and a decision, and the journal of
// the move.
func recordPick(st *runrecord.State, p *picking, now time.Time) (*runrecord.Rollback, error) {
	in := p.in
	// The attempts' ranks and statuses change as the run's do: through
	// their one owner.
	was, err := attempts.New(func(string) *runrecord.TaskInfo { return in }, func() time.Time { return now }).Picked(p.task, p.picked.Attempt)
	if err != nil {
		return nil, fmt.Errorf("pick: %w", err)
	}
	reason := fmt.Sprintf("attempt %d merged in place of ", p.picked.Attempt)
	if was != 0 {
		reason += fmt.Sprintf("attempt %d (kept as %s)", was, checkpoint.AttemptRef(st.RunID, p.task, was))
	} else {
		reason += "the result merged"
	}
	reason += ", by planagent pick"
	in.Commit, in.Checkpoint = p.to, p.to
	in.History = append(in.History, reason)
	st.Decisions = append(st.Decisions, runrecord.Decision{Time: now, Task: p.task, Action: "pick", Reason: reason})
	j := &runrecord.Rollback{From: p.from, To: p.to, Keep: st.Checkpoints.Merges, Task: p.task, Pick: p.picked.Attempt}
	st.Checkpoints.Rollback = j
	return j, nil
}

// reportPick says what the branch holds now.
func reportPick(f *cmdutil.Factory, st *runrecord.State, task string, j *runrecord.Rollback) {
	fmt.Fprintf(f.IO.Out, "task %s: attempt %d is merged (commit %s)\n", task, j.Pick, short(j.To))
	if in := st.Info[task]; in != nil && len(in.History) > 0 {
		fmt.Fprintln(f.IO.Out, in.History[len(in.History)-1])
	}
}

// attemptCommit is the kept result of attempt n of task for `diff
// --attempt`: "" for the merged attempt (its result is the task's
// checkpoint); an attempt without a result is refused, saying how it
// ended.
func attemptCommit(ctx context.Context, repo *checkpoint.Repo, st *runrecord.State, task string, n int) (string, error) {
	in := st.Info[task]
	if _, ok := taskOf(st, task); !ok || in == nil {
		return "", cmdutil.UsageError(fmt.Errorf("run %s has no task %q (see `planagent status %s`)", st.RunID, task, st.RunID))
	}
	r := resultOf(in, n)
	if r != nil && r.Rank == 1 {
		return "", nil
	}
	commit, err := repo.AttemptCommit(ctx, st.RunID, task, n)
	if err != nil || commit != "" {
		return commit, err
	}
	if r == nil {
		return "", cmdutil.UsageError(noAttempt(in, task, n))
	}
	return "", cmdutil.UsageError(fmt.Errorf("attempt %d of task %s left no result to show (%s): only an attempt whose work was committed keeps it", n, task, endedAs(r)))
}

func resultOf(in *runrecord.TaskInfo, n int) *runrecord.AttemptResult {
	for i := range in.Results {
		if in.Results[i].Attempt == n {
			return &in.Results[i]
		}
	}
	return nil
}

// noAttempt says which attempts task has, when n is not one of them.
func noAttempt(in *runrecord.TaskInfo, task string, n int) error {
	if len(in.Results) == 0 {
		return fmt.Errorf("task %s has no attempt on record", task)
	}
	have := make([]string, len(in.Results))
	for i, a := range in.Results {
		have[i] = fmt.Sprintf("%d (%s)", a.Attempt, a.Status)
	}
	return fmt.Errorf("task %s has no attempt %d; its attempts: %s", task, n, strings.Join(have, ", "))
}

// endedAs is how an attempt ended, with why when it failed.
func endedAs(r *runrecord.AttemptResult) string {
	if r.Error != "" {
		return r.Status + ": " + r.Error
	}
	return r.Status
}

// mergedAfter are the tasks completed after the merge numbered merge, in
// the order they were.
func mergedAfter(st *runrecord.State, merge int) []string {
	type done struct {
		id string
		n  int
	}
	var after []done
	for id, in := range st.Info {
		if in.Merge > merge {
			after = append(after, done{id, in.Merge})
		}
	}
	slices.SortFunc(after, func(a, b done) int { return a.n - b.n })
	ids := make([]string, len(after))
	for i, d := range after {
		ids[i] = d.id
	}
	return ids
}

// builtOn are the tasks whose attempt in progress was copied from
// checkpoint, or whose merge onto it was cut short: a resume would merge
// their work, made on the replaced result, onto the picked one.
func builtOn(st *runrecord.State, checkpoint string) []string {
	var ids []string
	for _, t := range st.Tasks {
		in := st.Info[t.ID]
		if in == nil {
			continue
		}
		if in.Merging != "" || (t.Status == taskgraph.InProgress && in.Base == checkpoint) {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

func orAny(ids []string, none string) string {
	if len(ids) == 0 {
		return none
	}
	return strings.Join(ids, ", ")
}

// inBoth are the paths of a that b holds too.
func inBoth(a, b []string) []string {
	var out []string
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}
