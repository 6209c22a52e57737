// Package orchestrator drives a planned run to completion (seed 004's
// orchestrator): for each ready task it writes the task context and the
// command file, waits for the report (fsnotify on reports/), checks the
// acceptance commands, updates the graph and the project context, decides
// what to do after a failure, and ends with a summary. The state is persisted
// after every transition so `planagent resume` can continue after a crash.
//
// The loop runs in one goroutine that owns the graph and the state; the only
// concurrency is the runtime's (the watcher runs tasks in parallel).
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/projectctx"
	"github.com/codeagent/codeagent/planagent/internal/runtime"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Runtime is what the orchestrator needs of a runtime backend.
type Runtime interface {
	Start(ctx context.Context) error
	Exited() <-chan error
	Exec(ctx context.Context, command string, timeout time.Duration) (runtime.ExecResult, error)
	Stop(ctx context.Context) error
}

// Failure is what a Decider is told about a failed task.
type Failure struct {
	Task         taskgraph.Task
	Error        string
	PlanSummary  string
	AttemptsLeft int
}

// Verdict is a Decider's answer.
type Verdict struct {
	Action  string      // retry | replan | continue | abort
	Reason  string      //
	Hints   []string    // for retry
	Replan  []plan.Task // for replan: the new remaining tasks
	Usage   llm.Usage
	Invalid string // why the model's answer was unusable (then Action is continue)
}

// Decider decides what to do after a failure.
type Decider interface {
	Decide(ctx context.Context, f Failure) Verdict
}

// Options configure a run.
type Options struct {
	Layout      volume.Layout
	Runtime     Runtime
	Decider     Decider // nil: retry while attempts are left, then continue
	Events      events.Sink
	Logger      *slog.Logger
	Parallel    int           // default 1
	MaxRetries  int           // retries of a failed task
	TaskTimeout time.Duration // no report within this → failed (default 30m)
	AcceptTime  time.Duration // per acceptance command (default 10m)
	// HeartbeatTimeout: with tasks in flight and no watcher heartbeat this
	// fresh, the watcher is taken for dead (default 30s; watchers beat every 2s).
	HeartbeatTimeout time.Duration
	Now              func() time.Time
}

// Orchestrator drives runs.
type Orchestrator struct {
	opts Options
}

// New returns an orchestrator with defaults filled in.
func New(opts Options) *Orchestrator {
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.TaskTimeout <= 0 {
		opts.TaskTimeout = 30 * time.Minute
	}
	if opts.AcceptTime <= 0 {
		opts.AcceptTime = 10 * time.Minute
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = 30 * time.Second
	}
	if opts.Events == nil {
		opts.Events = events.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Orchestrator{opts: opts}
}

// flight is a dispatched task waiting for its report.
type flight struct {
	attempt  int
	deadline time.Time
	offset   int64 // bytes of the events file already shown
	warned   bool  // a stale report was logged once
}

// run is the state of one Drive call.
type run struct {
	o        *Orchestrator
	st       *State
	g        *taskgraph.Graph
	ctxm     *projectctx.Manager
	inflight map[string]*flight
	issues   []string
	aborted  bool
}

// Drive runs st until every task is finished, the model aborts, or ctx is
// cancelled (then the state is saved as interrupted and ctx's error returned).
// The runtime is started here and stopped before Drive returns.
func (o *Orchestrator) Drive(ctx context.Context, st *State) (err error) {
	g, err := taskgraph.New(st.Tasks)
	if err != nil {
		return fmt.Errorf("run %s: rebuild task graph: %w", st.RunID, err)
	}
	l := o.opts.Layout
	if err := l.Ensure(); err != nil {
		return err
	}
	title, overview := "", ""
	if st.Plan != nil {
		title, overview = st.Plan.Title, st.Plan.Overview
	}
	r := &run{o: o, st: st, g: g, ctxm: projectctx.New(l, st.RunID, st.Goal, title, overview), inflight: map[string]*flight{}}
	st.Status = RunRunning
	if err := r.save(); err != nil {
		return err
	}
	if err := r.ctxm.InitProject(g); err != nil {
		return err
	}

	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch reports: %w", err)
	}
	defer w.Close()
	if err := w.Add(l.Reports()); err != nil {
		return fmt.Errorf("watch %s: %w", l.Reports(), err)
	}

	if err := o.opts.Runtime.Start(ctx); err != nil {
		return fmt.Errorf("start the coding agent: %w", err)
	}
	defer func() {
		if serr := o.opts.Runtime.Stop(context.WithoutCancel(ctx)); serr != nil {
			o.opts.Logger.Warn("stop runtime", "err", serr)
		}
	}()

	// Tasks in progress in the saved state (resume): keep waiting for them,
	// re-sending their command when it was lost.
	if err := r.adoptInProgress(); err != nil {
		return err
	}

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := r.collect(ctx); err != nil {
			return err
		}
		if !r.aborted {
			if err := r.dispatchReady(); err != nil {
				return err
			}
		}
		if len(r.inflight) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return r.interrupted(ctx.Err())
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("reports watcher closed")
			}
			r.progress(ev.Name)
		case werr, ok := <-w.Errors:
			if !ok {
				return errors.New("reports watcher closed")
			}
			// Overflow and friends: the collect at the top of the loop rescans.
			o.opts.Logger.Warn("reports watcher", "err", werr)
		case derr := <-o.opts.Runtime.Exited():
			if err := r.runtimeDied(ctx, derr); err != nil {
				return err
			}
		case <-tick.C:
			if err := r.checkTimeouts(); err != nil {
				return err
			}
			if err := r.checkHeartbeat(ctx); err != nil {
				return err
			}
		}
	}
	if ctx.Err() != nil {
		return r.interrupted(ctx.Err())
	}
	switch {
	case r.aborted:
		st.Status = RunAborted
	case g.Counts()[taskgraph.Completed] == len(g.Tasks()):
		st.Status = RunCompleted
	default:
		st.Status = RunFailed
	}
	if err := r.save(); err != nil {
		return err
	}
	return nil
}

func (r *run) save() error {
	r.st.Tasks = r.g.Tasks()
	return r.st.Save(r.o.opts.Layout, r.o.opts.Now())
}

func (r *run) interrupted(cause error) error {
	r.st.Status = RunInterrupted
	if err := r.save(); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// adoptInProgress makes in-progress tasks of a resumed run in-flight again.
func (r *run) adoptInProgress() error {
	l := r.o.opts.Layout
	for _, t := range r.g.Tasks() {
		if t.Status != taskgraph.InProgress {
			continue
		}
		info := r.info(t.ID)
		r.inflight[t.ID] = &flight{attempt: info.Attempt, deadline: r.o.opts.Now().Add(r.o.opts.TaskTimeout)}
		if exists(l.ReportFile(t.ID)) || exists(l.CommandFile(t.ID)) || exists(filepath.Join(l.Claimed(), t.ID+".md")) {
			continue // its report is waiting, or a watcher has it or will take it
		}
		// Crashed between saving the state and writing the command.
		if err := r.writeCommand(t, info); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) info(id string) *TaskInfo {
	in := r.st.Info[id]
	if in == nil {
		in = &TaskInfo{}
		r.st.Info[id] = in
	}
	return in
}

func (r *run) checkTimeouts() error {
	now := r.o.opts.Now()
	for id, f := range r.inflight {
		if now.After(f.deadline) {
			delete(r.inflight, id)
			if err := r.failed(context.Background(), id, fmt.Sprintf("no report within %s (task timeout)", r.o.opts.TaskTimeout)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHeartbeat takes a watcher whose heartbeat went stale while tasks are
// in flight for dead. Exited does not cover that: a compose watcher that
// planagent did not start, or a frozen process, never reports there. What the
// runtime started is stopped first, so a frozen watcher cannot come back and
// run the re-dispatched tasks a second time.
func (r *run) checkHeartbeat(ctx context.Context) error {
	if len(r.inflight) == 0 {
		return nil
	}
	dir, maxAge := r.o.opts.Layout.Watchers(), r.o.opts.HeartbeatTimeout
	if runtime.Alive(dir, maxAge) {
		return nil
	}
	if err := r.o.opts.Runtime.Stop(context.WithoutCancel(ctx)); err != nil {
		r.o.opts.Logger.Warn("stop the silent coding agent", "err", err)
	}
	return r.runtimeDied(ctx, fmt.Errorf("no watcher heartbeat in %s for %s", dir, maxAge))
}

// runtimeDied re-dispatches the in-flight tasks on a fresh watcher.
func (r *run) runtimeDied(ctx context.Context, cause error) error {
	r.o.opts.Logger.Warn("the coding agent died; retrying its tasks on a fresh one", "err", cause)
	r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID, Text: fmt.Sprintf("coding agent died: %v", cause)})
	l := r.o.opts.Layout
	for id := range r.inflight {
		for _, p := range []string{filepath.Join(l.Claimed(), id+".md"), filepath.Join(l.Claimed(), id+".owner.json")} {
			_ = os.Remove(p)
		}
		if exists(l.ReportFile(id)) {
			continue // it finished before dying
		}
		delete(r.inflight, id)
		// A task that kills every agent it runs on (it fills the memory, say)
		// must not retry forever: past the bound it fails like any other.
		if t, _ := r.g.Get(id); t.Attempts > r.o.opts.MaxRetries+maxDeaths {
			if err := r.failed(ctx, id, fmt.Sprintf("the coding agent died %d times while running it; last: %v", t.Attempts, cause)); err != nil {
				return err
			}
			continue
		}
		info := r.info(id)
		info.History = append(info.History, fmt.Sprintf("attempt %d: interrupted: the coding agent died (%v)", info.Attempt, cause))
		if err := r.g.Fail(id, "coding agent died"); err != nil {
			return err
		}
		if err := r.g.Retry(id); err != nil {
			return err
		}
	}
	if err := r.save(); err != nil {
		return err
	}
	if err := r.o.opts.Runtime.Start(ctx); err != nil {
		return fmt.Errorf("restart the coding agent: %w", err)
	}
	return nil
}

// maxDeaths is how many deaths of its agent a task survives beyond its retries.
const maxDeaths = 2

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return events.Shorten(s, n)
}
