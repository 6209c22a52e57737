package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/codeagent/codeagent/codingagent/internal/layers"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
)

// summaryLimit bounds a report's summary; the whole answer is the body.
const summaryLimit = 300

// process carries out the claimed command id and writes its report. It
// never returns an error: every failure ends up in the report or the log.
// The returned error is only that the report could not be written.
func (w *watcher) process(ctx context.Context, id string) error {
	log := w.log.With("task", id)
	if err := w.writeOwner(id); err != nil {
		log.Error("claim owner", "err", err)
	}
	cmd, data, err := readCommand(w.claimedFile(id), w.opts.Layout.CommandFile(id))
	if err != nil {
		log.Error("invalid command: reporting it as failed", "err", err)
		return w.finish(id, failedReport(id, data, err))
	}
	log = log.With("run", cmd.RunID, "attempt", cmd.Attempt)
	log.Info("task claimed", "title", cmd.Title, "workspace", cmd.Workspace)
	rep := w.run(ctx, id, cmd, log)
	log.Info("task done", "status", rep.Status, "duration", rep.Duration.String(), "error", rep.Error)
	return w.finish(id, rep)
}

// finish writes the report, then releases the claim. When the report cannot
// be written the claim stays, so a reconcile retakes the command.
func (w *watcher) finish(id string, rep *protocol.Report) error {
	if w.fence && !fenceContainer(w.log) {
		return fmt.Errorf("task %s: the container's other processes did not end: no report", id)
	}
	if err := w.writeReport(id, rep); err != nil {
		w.log.Error("report not written: the claim stays and will be retried", "task", id, "err", err)
		return err
	}
	w.release(id)
	return nil
}

// writeReport writes the report of the command claimed under stem: a task
// with several attempts in flight has one report file per attempt
// (protocol.Stem), which the report's id alone does not name.
func (w *watcher) writeReport(stem string, rep *protocol.Report) error {
	path := w.opts.Layout.ReportFile(stem)
	if err := protocol.WriteReport(path, rep); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// run combines the context layers, runs the command with events going to
// the events file and the log, and returns its report (never nil).
func (w *watcher) run(ctx context.Context, stem string, cmd *protocol.Command, log *slog.Logger) *protocol.Report {
	start := time.Now()
	rep := w.runTask(ctx, stem, cmd, log)
	rep.ID, rep.RunID, rep.Attempt = cmd.ID, cmd.RunID, cmd.Attempt
	rep.Duration = protocol.Duration(protocol.RoundDuration(time.Since(start)))
	if !rep.Status.Valid() {
		if rep.Error == "" {
			rep.Error = fmt.Sprintf("the task runner returned no valid status (%q)", rep.Status)
		}
		rep.Status = protocol.StatusFailed
	}
	if rep.Summary == "" {
		rep.Summary = summarize(rep.Body)
	}
	if rep.Summary == "" && rep.Error != "" {
		rep.Summary = summarize(rep.Error)
	}
	return rep
}

func (w *watcher) runTask(ctx context.Context, stem string, cmd *protocol.Command, log *slog.Logger) *protocol.Report {
	// The project's AGENTS.md comes from the copy the task works in; a
	// workspace that does not resolve fails the task in the runner, which
	// says why.
	workspace, _ := ResolveWorkspace(w.opts.Layout, cmd.Workspace)
	system, err := layers.Combine(layers.Options{TaskID: cmd.ID, RuntimeDir: w.opts.RuntimeDir, Templates: w.opts.Templates, Workspace: workspace})
	if err != nil {
		return &protocol.Report{Status: protocol.StatusFailed, Error: fmt.Sprintf("combine context layers: %v", err)}
	}
	evPath := w.opts.Layout.EventsFile(stem)
	f, err := protocol.OpenRegular(evPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return &protocol.Report{Status: protocol.StatusFailed, Error: fmt.Sprintf("open events file %s: %v", evPath, err)}
	}
	defer func() {
		if err := f.Close(); err != nil {
			log.Warn("close events file", "path", evPath, "err", err)
		}
	}()
	sink := events.WithTask(events.Multi{events.NewJSON(f), logSink(log)}, cmd.RunID, cmd.ID)
	sink.Emit(events.Event{Type: events.TaskStart, Text: cmd.Title, Data: map[string]any{"attempt": cmd.Attempt, "watcher": w.opts.WatcherID}})

	runCtx := ctx
	timeout := time.Duration(cmd.Timeout)
	if timeout == 0 {
		timeout = w.opts.TaskTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, timeout, errTaskTimeout)
		defer cancel()
	}
	rep, err := w.callRunner(runCtx, cmd, system, sink, log)
	if rep == nil {
		rep = &protocol.Report{}
	}
	var cause error // the model call that failed the report
	if mf := (*modelFailure)(nil); errors.As(err, &mf) {
		cause, err = mf.err, nil
	}
	// A task that completed just as its context ended keeps its result.
	switch done := err == nil && rep.Status == protocol.StatusCompleted; {
	case done:
	case errors.Is(context.Cause(runCtx), errTaskTimeout):
		rep.Status = protocol.StatusFailed
		rep.Error = fmt.Sprintf("timed out after %s: raise the command's timeout or split the task", timeout)
	case ctx.Err() != nil:
		rep.Status = protocol.StatusInterrupted
		if rep.Error == "" {
			rep.Error = "interrupted: the watcher was stopped; the task can be dispatched again"
		}
	case (err != nil || rep.Status == protocol.StatusFailed) && w.stoppedUnder(errors.Join(err, cause)):
		rep.Status = protocol.StatusInterrupted
		rep.Error = "interrupted: the model could not be reached as the watcher was stopped (" + errors.Join(err, cause).Error() + "); the task can be dispatched again"
	case err != nil:
		rep.Status = protocol.StatusFailed
		rep.Error = err.Error()
	}
	end := events.Event{Type: events.TaskEnd, Status: string(rep.Status), Text: rep.Error,
		Usage: &events.Usage{Prompt: rep.Tokens.Prompt, Completion: rep.Tokens.Completion}}
	sink.Emit(end)
	return rep
}

var errTaskTimeout = errors.New("command timeout")

// defaultStopSettle is how long a task whose model became unreachable
// waits to see whether its watcher is being stopped.
const defaultStopSettle = 2 * time.Second

// stoppedUnder reports whether the connection failure err came with the
// watcher's stop: planagent died (the local watcher's model gateway is in
// it) and its stop signal is on the way. Such a task is interrupted, to be
// dispatched again, not failed. The signal and the closed connection race,
// hence the wait; only a task that failed to reach the model pays it.
func (w *watcher) stoppedUnder(err error) bool {
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 0 || w.stopping == nil {
		return false
	}
	t := time.NewTimer(w.opts.StopSettle)
	defer t.Stop()
	select {
	case <-w.stopping:
		return true
	case <-t.C:
		return false
	}
}

// callRunner turns a panic in the runner into a failed task: one bad task
// must not take down the watcher and the tasks running beside it.
func (w *watcher) callRunner(ctx context.Context, cmd *protocol.Command, system string, sink events.Sink, log *slog.Logger) (rep *protocol.Report, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("task runner panicked", "panic", p, "stack", string(debug.Stack()))
			rep, err = nil, fmt.Errorf("internal error in the task runner: %v", p)
		}
	}()
	return w.opts.Runner.Run(ctx, cmd, system, sink)
}

// logSink logs the events a person follows in `docker logs`; tokens and
// unrendered events stay in the events file only.
func logSink(log *slog.Logger) events.Sink {
	return events.Func(func(e events.Event) {
		if e.Type == events.Token {
			return
		}
		if line := events.Line(e); line != "" {
			log.Info(line)
		}
	})
}

// summarize returns the first paragraph of s, at most summaryLimit runes.
func summarize(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.Join(strings.Fields(s), " ")
	return events.Shorten(s, summaryLimit)
}
