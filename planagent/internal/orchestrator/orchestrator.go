// Package orchestrator drives a planned run to completion: for each ready
// task it writes the task context and the command file, waits for the
// report (fsnotify on reports/), checks the acceptance commands, updates the
// graph and the project context, decides what to do after a failure, and
// ends with a summary. The state is persisted after every transition so
// `planagent resume` can continue after a crash.
//
// The loop is event → next.Decide → actions: package next decides and does
// no I/O (nextview.go is what it reads), the executor (execute.go) carries
// the actions out, and the observer (observe.go) turns files, ticks and the
// runtime into events. One goroutine owns the graph and the state;
// acceptance commands and decider calls run beside it and report back as
// events.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/fswatch"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/judge"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/attempts"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/series"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/projectctx"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Runtime is what the orchestrator needs of a runtime backend: where each
// task attempt's codingagent runs and where acceptance commands run. cli
// builds one (planagent/internal/runtime/docker, .../kube, .../local)
// and hands it over; the orchestrator
// imports none of them (depguard's orchestrator-runtimes rule).
type Runtime interface {
	// Start checks the runtime can work (an unusable engine, image or
	// model server is an error here) and starts a shared watcher where the
	// runtime has one, returning once its heartbeat is seen.
	Start(ctx context.Context) error
	// Launch starts what carries out an attempt whose command is written
	// (its own container, in the docker runtime); a shared watcher needs nothing.
	Launch(ctx context.Context, a attempt.Attempt) error
	// Abandon stops what still works on attempt n of a task, given up on
	// (timed out), before its copy is thrown away; the task's other
	// attempts run on. Nothing where one watcher serves every task.
	Abandon(ctx context.Context, taskID string, n int) error
	// Exited reports an attempt's agent, or the shared watcher, dying
	// (exit code, OOM) without its report; a nil channel when the runtime
	// serves through a watcher it did not start.
	Exited() <-chan attempt.Exit
	// Exec runs an acceptance command (sh -c) with dir, a host path (the
	// workspace or a directory under the volumes), as its working
	// directory, as the agent would see it.
	Exec(ctx context.Context, dir, command string, timeout time.Duration) (attempt.ExecResult, error)
	// Stop stops and removes what Start created; idempotent; works with a
	// cancelled ctx.
	Stop(ctx context.Context) error
}

// Reviewer picks one of a task's tied passing attempts (judge.LLM).
type Reviewer interface {
	Pick(ctx context.Context, t judge.Task, tied []judge.Candidate) (judge.Verdict, error)
}

// Failure is what a Decider is told about a failed task.
type Failure struct {
	Task         taskgraph.Task
	Error        string
	PlanSummary  string
	AttemptsLeft int
}

// Choice is what is done about a failed task.
type Choice = next.Choice

// The choices of the decision step.
const (
	Retry    = next.Retry    // run the task again, with hints
	Replan   = next.Replan   // replace every unfinished task
	Continue = next.Continue // go on without it (its dependants are skipped)
	Abort    = next.Abort    // stop the run
)

// Verdict is a Decider's answer.
type Verdict struct {
	Action  Choice
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
	Layout  volume.Layout
	Runtime Runtime
	Decider Decider // nil: retry while attempts are left, then continue
	// Failpoint, when set, is called at named points where a crash must be
	// survivable ("advance": a merge's target saved, the branch not moved;
	// "advanced": moved, not yet recorded), so tests can kill -9 there.
	Failpoint func(name string)
	// Repo holds the run's checkpoints; with it (and State.Checkpoints set)
	// every attempt works in its own copy and is merged when it completes.
	Repo   Repo
	Events events.Sink
	Logger *slog.Logger
	// Watch opens the reports' watcher (nil: fsnotify, polling without it).
	Watch      *fswatch.Opener
	Parallel   int // default 1
	MaxRetries int // retries of a failed task
	// Attempts is each task's number of independent attempts where the
	// plan does not say (best-of-N; default 1); Policy how they run
	// (config.AttemptEscalate, the default, or config.AttemptParallel);
	// FirstPassWins stops a task's other attempts once one passed; Judge
	// ranks the passing attempts (see docs/attempts.md).
	Attempts      int
	Policy        string
	FirstPassWins bool
	Judge         string
	// Reviewer is the LLM judge asked, with Judge "llm", which of a
	// task's tied best passing attempts to merge (nil: none is asked).
	Reviewer    Reviewer
	TaskTimeout time.Duration // no report within this → failed (default 30m)
	AcceptTime  time.Duration // per acceptance command (default 10m)
	// SetupCommand runs in each fresh copy: by the coding agent before it
	// starts (the command file's setup), and before the acceptance
	// commands in their copy.
	SetupCommand string
	// HeartbeatTimeout: with tasks in flight and no watcher heartbeat this
	// fresh, the watcher is taken for dead (default 30s; watchers beat every 2s).
	HeartbeatTimeout time.Duration
	// Budget pauses the run when reached and bounds each task's tokens.
	Budget Budget
	// Meter is the model gateway's count of the attempts' tokens (nil:
	// no gateway, and the reports' figures are booked).
	Meter Meter
	// Egress is the egress proxy's record of what it refused each
	// attempt (nil: no proxy, or egress open).
	Egress EgressLog
	Now    func() time.Time
	// Tick paces the checks that depend on the clock (task timeouts, the
	// watcher's heartbeat) and a rescan of reports/; nil is a one-second
	// ticker. Tests send ticks instead of waiting for them.
	Tick <-chan time.Time
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
	if opts.Attempts < 1 {
		opts.Attempts = 1
	}
	if opts.Policy == "" {
		opts.Policy = "escalate"
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
	if opts.Watch == nil {
		opts.Watch = &fswatch.Opener{Logger: opts.Logger}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Orchestrator{opts: opts}
}

// flight is a dispatched task waiting for its report.
type flight struct {
	next.Flight
	offset int64 // bytes of the events file already shown
	warned bool  // a stale report was logged once
}

// newFlight is attempt n of task id, whose command went out now.
func (r *run) newFlight(id string, attempt int) *flight {
	now := r.o.opts.Now()
	return &flight{Flight: next.Flight{ID: id, Attempt: attempt, Launched: now, Deadline: now.Add(r.o.opts.TaskTimeout)}}
}

// run is the state of one Drive call. Only Drive's goroutine touches it;
// off-loop work reports back through results.
type run struct {
	o         *Orchestrator
	st        *runrecord.State
	g         *taskgraph.Graph
	root      *safefs.Root // the volumes, written without following links the agents planted
	ctxm      *projectctx.Manager
	underway  *underway         // what next reads of the work under way (underway.go)
	series    *series.Tracker   // the series of the tasks of several attempts under way (several.go)
	attempts  *attempts.Results // the attempts' statuses and spans on the record
	copies    sync.WaitGroup    // the copies being made
	squashing sync.WaitGroup    // the queued attempts' squashes (enqueueMerge)
	merges    sync.WaitGroup    // merges off the loop, until their acceptance copy is thrown away
	offLoop   sync.WaitGroup    // acceptance runs and decider calls (startAcceptance, startDecision)
	issues    []string
	done      bool
	results   chan event
	stopped   chan struct{} // closed when Drive returns
	// started and elapsed: this Drive's start and the run's running time
	// before it, so State.Elapsed counts only time spent running.
	started time.Time
	elapsed time.Duration
	// outcomes are events the executor met while carrying actions out,
	// for the loop to decide on next.
	outcomes []event
	// spent: the tokens booked and the budget's announcement, which next
	// reads (spent.go).
	spent *spent
	// gate is what the model gateway's budget check reads (nil without a Meter).
	gate   *gate
	traces *traces // each attempt's invoke_agent span (trace.go)
	work   *worker // what runs off the loop (worker.go)
}

func (o *Orchestrator) newRun(st *runrecord.State, g *taskgraph.Graph, root *safefs.Root, ctxm *projectctx.Manager) *run {
	r := &run{o: o, st: st, g: g, root: root, ctxm: ctxm,
		underway: newUnderway(), series: series.New(), spent: newSpent(st), results: make(chan event), stopped: make(chan struct{}),
		traces: newTraces(st.RunID), work: &worker{opts: &o.opts}}
	r.attempts = attempts.New(r.info, o.opts.Now)
	return r
}

// Drive runs st until every task is finished, the model aborts, or ctx is
// cancelled (then the state is saved as interrupted and ctx's error returned).
// The runtime is started here and stopped before Drive returns.
func (o *Orchestrator) Drive(ctx context.Context, st *runrecord.State) (err error) {
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
	root, err := safefs.OpenRoot(l.Root, o.opts.Logger)
	if err != nil {
		return err
	}
	defer root.Close()
	// runrecord writes runs/<run> through a root of its own, which has no
	// logger: a link planted as the run's dir is replaced here, named.
	if err := root.MkdirAll(l.Run(st.RunID)); err != nil {
		return fmt.Errorf("run %s: %w", st.RunID, err)
	}
	r := o.newRun(st, g, root, projectctx.New(root, l, st.RunID, st.Goal, title, overview))
	defer r.squashing.Wait()
	defer r.merges.Wait() // after stopped is closed: their EvMerged is dropped
	// Acceptance runs and decider calls are cut short (their ctx is
	// cutShort's), then waited for: nothing Drive started outlives it.
	defer r.offLoop.Wait()
	// A merge still running its acceptance commands when the run ends on
	// an error is cut short, not waited for.
	ctx, cutShort := context.WithCancel(ctx)
	defer cutShort()
	defer r.copies.Wait() // after stopped is closed: their EvCopied is dropped
	defer close(r.stopped)
	defer r.traces.endAll()
	defer st.Close()
	r.started, r.elapsed = o.opts.Now(), st.Elapsed
	r.meterOn()
	st.Status, st.Paused, st.Stop, st.ConfigError = runrecord.RunRunning, "", nil, "" // a resume is the fix's test
	if err := r.save(); err != nil {
		return err
	}
	// A run that cannot go on (a copy that cannot be made, the engine
	// gone, the disk full) is not left "running" for good: it is
	// interrupted, resumable, with the cause in its state.
	defer func() {
		if err != nil && !errors.Is(err, context.Canceled) && st.Status == runrecord.RunRunning {
			st.Status, st.Stop = runrecord.RunInterrupted, &runrecord.Stop{Reason: runrecord.StopSetupError, Detail: firstLine(err.Error())}
			if serr := r.save(); serr != nil {
				err = errors.Join(err, serr)
			}
		}
	}()
	r.noteSequentialAttempts()
	if err := r.ctxm.InitProject(g); err != nil {
		return err
	}

	// Without file events (no inotify instance left) the ticker's
	// collect below finds the reports.
	w := o.opts.Watch.Watch(l.Reports())
	defer fswatch.Close(w)

	if err := o.opts.Runtime.Start(ctx); err != nil {
		return fmt.Errorf("start the coding agent: %w", err)
	}
	defer func() {
		if serr := o.opts.Runtime.Stop(context.WithoutCancel(ctx)); serr != nil {
			o.opts.Logger.Warn("stop runtime", "err", serr)
		}
	}()

	// Tasks in progress in the saved state (resume): finish an interrupted
	// merge, then keep waiting for the others, re-sending a lost command.
	if err := r.recoverMerges(ctx); err != nil {
		return err
	}
	if err := r.adoptInProgress(ctx); err != nil {
		return err
	}
	// A runtime that keeps what a killed planagent left running, for the
	// tasks still in progress to adopt, drops what none took.
	if d, ok := o.opts.Runtime.(interface{ DropUnadopted(context.Context) error }); ok {
		if err := d.DropUnadopted(ctx); err != nil {
			o.opts.Logger.Warn("delete what a previous process left", "err", err)
		}
	}

	tick := o.opts.Tick
	if tick == nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	evs := r.collect() // reports that arrived while planagent was down
	for !r.done {
		if err := r.handle(ctx, append(evs, next.EvSettle{})); err != nil {
			return err
		}
		// One fsync for the records of these events, unless a dispatch
		// already took it: a task's end and the next task's start, the
		// common pair, share one.
		if err := r.st.Sync(); err != nil {
			return err
		}
		if r.done {
			break
		}
		if evs, err = r.wait(ctx, w, tick); err != nil {
			return err
		}
	}
	return nil
}

// handle decides on each event in turn and carries the decision out. What
// carrying it out turns up (a merged result that cannot reach the
// workspace) comes back as an event, decided on before the rest.
func (r *run) handle(ctx context.Context, evs []event) error {
	defer func() { r.gate.sync(r.spent.booked()) }() // the planner's and the decider's tokens, and what was booked
	for len(evs) > 0 {
		if rep, ok := evs[0].(reported); ok {
			r.meterReport(rep.ID, rep.Report)
		}
		src, ev := nextEvent(r.g, evs[0])
		acts := next.Decide(r.view(), ev)
		if err := r.apply(ctx, src, acts); err != nil {
			return err
		}
		evs = evs[1:]
		if _, ok := ev.(next.EvSettle); ok && next.SettlesAgain(acts) {
			evs = append(evs, next.EvSettle{})
		}
		if len(r.outcomes) > 0 {
			evs, r.outcomes = append(r.outcomes, evs...), nil
		}
	}
	return nil
}

// wait blocks until something happens and returns it as events.
func (r *run) wait(ctx context.Context, w *fsnotify.Watcher, tick <-chan time.Time) ([]event, error) {
	select {
	case <-ctx.Done():
		return nil, r.interrupted(ctx.Err())
	case ev := <-r.results:
		if ctx.Err() != nil {
			// Cut short by Ctrl-C: not an answer to act on.
			return nil, r.interrupted(ctx.Err())
		}
		switch ev := ev.(type) {
		case decided:
			r.underway.decideEnded()
			r.spent.modelUsed(ev.Verdict.Usage)
		case next.EvAccepted:
			r.underway.acceptEnded()
			r.attempts.Accepted(ev.ID, r.info(ev.ID).Attempt, ev.Output)
			// The acceptance commands go out through the egress proxy too.
			r.noteEgress(ev.ID, r.info(ev.ID).Attempt)
		case next.EvMerged:
			if job := r.underway.mergeEnded(); job.id == ev.ID {
				r.attempts.Merged(ev.ID, job.attempt, ev.Kept, ev.Acceptance)
				r.noteEgress(ev.ID, job.attempt)
			}
		case next.EvCopied:
			r.underway.copied(len(ev.IDs))
		case checked:
			follow, err := r.onChecked(ev)
			if err != nil || !follow {
				return nil, err
			}
			return []event{ev.EvChecked}, nil
		case reviewed:
			return nil, r.onReviewed(ev) // the settle that follows chooses again
		}
		return []event{ev}, nil
	case fe, ok := <-fswatch.Events(w):
		if !ok {
			return nil, errors.New("reports watcher closed")
		}
		r.progress(fe.Name)
		return r.collect(), nil
	case werr, ok := <-fswatch.Errors(w):
		if !ok {
			return nil, errors.New("reports watcher closed")
		}
		// Overflow and friends: scan everything again.
		r.o.opts.Logger.Warn("reports watcher", "err", werr)
		return r.collect(), nil
	case ex := <-r.o.opts.Runtime.Exited():
		if ex.Unfenced && ex.TaskID != "" {
			r.underway.lostTrack(r.key(ex.TaskID, ex.Attempt)) // its copy is deleted, not recycled
		}
		return []event{r.agentDied(ex)}, nil
	case <-tick:
		return append(r.collect(), next.EvTick{Now: r.o.opts.Now(), Heartbeat: lastHeartbeat(r.o.opts.Layout.Watchers())}), nil
	}
}

// noteSequentialAttempts tells the operator that a run without
// checkpoints runs a task's attempts one after another, the first passing
// one merged, whatever the policy says: they share the one workspace, so
// they cannot run side by side nor be ranked (docs/attempts.md).
func (r *run) noteSequentialAttempts() {
	if r.isolated() {
		if r.o.opts.Judge == "llm" && r.o.opts.Reviewer == nil {
			r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID,
				Text: "judge llm: no model to ask; passing attempts are ranked by the deterministic rules; see docs/attempts.md"})
		}
		return
	}
	for _, t := range r.g.Tasks() {
		if bestOf(t, r.o.opts.Attempts) > 1 {
			r.o.opts.Events.Emit(events.Event{Type: events.Log, RunID: r.st.RunID,
				Text: "attempts: without checkpoints a task's attempts share the workspace, so they run one after another, the first that passes merged, and no judge runs; see docs/attempts.md"})
			return
		}
	}
}

// save writes a snapshot of the whole run: for transitions that touch many
// tasks (a failure skips its dependents, a replan) and the run's start and end.
func (r *run) save() error {
	r.st.Tasks = r.g.Tasks()
	r.st.Elapsed = r.elapsed + r.o.opts.Now().Sub(r.started)
	return r.st.Save(r.o.opts.Layout, r.o.opts.Now())
}

// record journals a transition of the tasks ids (none: only run-level
// fields such as a decision or the usage changed): O(1) in the run's size.
func (r *run) record(ids ...string) error {
	tasks := make([]taskgraph.Task, 0, len(ids))
	for _, id := range ids {
		t, ok := r.g.Get(id)
		if !ok {
			return r.save()
		}
		tasks = append(tasks, t)
	}
	r.st.Elapsed = r.elapsed + r.o.opts.Now().Sub(r.started)
	return r.st.Record(r.o.opts.Layout, r.o.opts.Now(), tasks...)
}

func (r *run) interrupted(cause error) error {
	r.st.Status = runrecord.RunInterrupted
	r.st.Stop = &runrecord.Stop{Reason: runrecord.StopInterrupted}
	if err := r.save(); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}
