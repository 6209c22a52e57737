package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/planagent/internal/notify"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/webui"
)

// NewCmdResume builds `planagent resume`.
func NewCmdResume(f *cmdutil.Factory, runF func(*cobra.Command, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue an interrupted run (default: the latest unfinished one)",
		Long: `Continue RUN after Ctrl-C, kill -9 or a crash: completed tasks are not redone,
reports that arrived while planagent was down are read, and the remaining
tasks are dispatched. A failed run continues with --retry-failed: its failed
tasks, and the tasks skipped because of them, are tried again. A finished
run with review comments (planagent comment) continues with their follow-up
tasks. The run keeps the runtime, image, workspace, parallelism, retry
limit and task timeout it was started with; --runtime, --image, --workspace,
--parallel and --max-retries override them.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeRun(f, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			run := ""
			if len(args) == 1 {
				run = args[0]
			}
			if runF != nil {
				return runF(cmd, run)
			}
			return runResume(cmd, f, run)
		},
	}
	fl := cmd.Flags()
	fl.Bool("json", false, "one JSON event per line on stdout")
	// run takes --yes: a script that passes it to both must not break on
	// resume, which asks nothing (the plan was accepted when the run began).
	fl.BoolP("yes", "y", false, "accepted as run takes it; resume asks nothing (the plan was accepted at the start)")
	fl.Bool("retry-failed", false, "give a failed run's failed tasks (and those skipped because of them) another try, with their retries anew")
	fl.Bool("ui", false, "serve the live web view of the run (see planagent ui) while it runs")
	fl.String("ui-addr", webui.DefaultAddr, "host:port of the web view of --ui")
	addSettingFlags(cmd, true)
	return cmd
}

func runResume(cmd *cobra.Command, f *cmdutil.Factory, runID string) error {
	ctx := cmd.Context()
	s, err := newSession(f, cmd)
	if err != nil {
		return err
	}
	if err := s.needKey(); err != nil {
		return err
	}
	if err := s.ensureVolumes(); err != nil {
		return err
	}
	retryFailed, _ := cmd.Flags().GetBool("retry-failed")
	st, err := s.resumableState(runID, retryFailed)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	lock, err := runlock.Acquire(s.layout.Run(st.RunID))
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
	}
	defer lock.Release()
	// Read again under the lock: a holder that just ended has moved it on.
	if st, err = runrecord.LoadState(s.layout, st.RunID, false); err != nil {
		return cmdutil.UsageError(err)
	}
	pending, err := s.pendingReview(st.RunID)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if retryFailed {
		ids, err := st.RetryFailed()
		if err != nil {
			return cmdutil.UsageError(fmt.Errorf("run %s: %w", st.RunID, err))
		}
		if len(ids) == 0 {
			return cmdutil.UsageError(fmt.Errorf("run %s has no failed task to retry", st.RunID))
		}
		if err := st.Save(s.layout, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Err, "retrying the failed tasks of %s: %s\n", st.RunID, strings.Join(ids, ", "))
	}
	if st.Status.Finished() && len(pending) == 0 {
		hint := fmt.Sprintf("review comments (`planagent comment %s TASK FILE:LINE TEXT`) would become follow-up tasks", st.RunID)
		if st.Status != runrecord.RunCompleted {
			hint = fmt.Sprintf("`planagent resume %s --retry-failed` tries its failed tasks again", st.RunID)
		}
		return cmdutil.UsageError(fmt.Errorf("run %s is already %s; nothing to resume (%s)", st.RunID, st.Status, hint))
	}
	if err := s.resumeWith(cmd, st.Settings); err != nil {
		return err
	}
	model := s.cfg.Model
	if st.Settings != nil && st.Settings.Model != "" {
		model = st.Settings.Model
	}
	if s.runBudget, err = s.budget(model); err != nil {
		return err
	}
	if err := s.checkServer(ctx); err != nil {
		return err
	}
	jsonOut, _ := cmd.Flags().GetBool("json")
	if withUI, _ := cmd.Flags().GetBool("ui"); withUI {
		addr, _ := cmd.Flags().GetString("ui-addr")
		ui, err := s.listenUI(addr)
		if err != nil {
			return err
		}
		defer s.startUI(ctx, ui, st.RunID)()
	}
	rt, err := s.runtime(ctx, st.RunID, s.logs)
	if err != nil {
		return err
	}
	// The boundary of the attempts this resume starts.
	s.boundary = boundaryOf(rt)
	st.Boundary = s.boundary
	s.announce(f.IO.Err)
	if s.repo, err = s.resumeCheckpoints(ctx, st, f.IO.Err); err != nil {
		return err
	}
	if len(pending) > 0 {
		if err := s.addFollowUps(ctx, st, s.repo, pending, f.IO.Err); err != nil {
			return cmdutil.UsageError(fmt.Errorf("run %s: the review's follow-up tasks: %w", st.RunID, err))
		}
	}
	notifier := notify.New(s.cfg.Notify, s.logger)
	defer notifier.Wait()
	sink := notify.Sink(ctx, s.sink(jsonOut), notifier, st.Goal)
	s.events = sink
	ctx, span := traceRun(ctx, st.RunID, st.TraceParent)
	defer span.End()
	sink.Emit(events.Event{Type: events.Log, RunID: st.RunID, Text: "resuming run " + st.RunID})
	return drive(ctx, s, st, rt, s.llm(), sink, jsonOut)
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
