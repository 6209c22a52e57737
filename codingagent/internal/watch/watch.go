package watch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sync/errgroup"

	"github.com/codeagent/codeagent/codingagent/internal/layers"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// TaskRunner carries out one command. systemContext is the combined context
// layers; progress goes to ev. On ctx cancellation it returns a report with
// status interrupted (or ctx's error). The watcher fills in the report's id,
// run id, attempt and duration, and the summary when left empty.
type TaskRunner interface {
	Run(ctx context.Context, cmd *protocol.Command, systemContext string, ev events.Sink) (*protocol.Report, error)
}

// Options configures Run. Zero values take the defaults named on each field.
type Options struct {
	Layout      volume.Layout
	Concurrency int           // tasks run at once (default 1)
	Poll        time.Duration // > 0 polls commands/ at this interval; 0 = fsnotify, polling every 1s when events do not arrive
	RuntimeDir  string        // runtime context dir (default Layout.Context())
	Templates   fs.FS         // global-layer templates (default layers.Embedded())
	Runner      TaskRunner    // required
	Logger      *slog.Logger  // default: discard
	WatcherID   string        // default: random
	Heartbeat   time.Duration // heartbeat interval (default 2s)
	StaleAfter  time.Duration // a claim whose owner's heartbeat is older is retaken (default 10s)
	MaxAttempts int           // attempts before a command is abandoned (default 3)
	Grace       time.Duration // time running tasks get to finish after shutdown (default 10s)
	Reconcile   time.Duration // periodic scan and recovery even with fsnotify (default 5s)
	Probe       time.Duration // how long to wait for the fsnotify probe event (default 2s)
	TaskTimeout time.Duration // limit of a command that sets no timeout; 0 = none
	StopSettle  time.Duration // how long a task that lost the model waits to see the watcher stopped (default 2s)
	// Task, when set, makes Run carry out the command of that one task and
	// return once its report is written (a container per attempt runs
	// `codingagent watch --task ID`): no recovery of other watchers'
	// claims, no watching for more commands.
	Task string
	Now  func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	if o.Runner == nil {
		return o, ErrNoRunner
	}
	if o.Layout.Root == "" {
		return o, fmt.Errorf("watch: Options.Layout is required (volume.New)")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.RuntimeDir == "" {
		o.RuntimeDir = o.Layout.Context()
	}
	if o.Templates == nil {
		o.Templates = layers.Embedded()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.WatcherID == "" {
		o.WatcherID = randomID()
	}
	if err := protocol.ValidateID(o.WatcherID); err != nil {
		return o, fmt.Errorf("watch: watcher id: %w", err)
	}
	if o.Task != "" {
		if err := protocol.ValidateID(o.Task); err != nil {
			return o, fmt.Errorf("watch: task id: %w", err)
		}
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 2 * time.Second
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 10 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	if o.StopSettle <= 0 {
		o.StopSettle = defaultStopSettle
	}
	if o.Reconcile <= 0 {
		o.Reconcile = 5 * time.Second
	}
	if o.Probe <= 0 {
		o.Probe = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "w-" + hex.EncodeToString(b)
}

// watcher is the state of one Run. The fields below mu are shared with the
// task goroutines; everything else belongs to the loop goroutine.
type watcher struct {
	opts    Options
	log     *slog.Logger
	host    string
	pid     int
	started time.Time

	pending   map[string]struct{}  // command ids seen in commands/, not yet claimed by us
	inflight  map[string]struct{}  // ids with a task goroutine
	ownerless map[string]time.Time // claims first seen without an owner file
	done      chan string          // task goroutines report their id here

	// addWatch adds dir to the fsnotify watcher; tests replace it to play a
	// filesystem whose events never arrive.
	addWatch func(*fsnotify.Watcher, string) error

	mu      sync.Mutex
	running map[string]struct{} // for the heartbeat
	kick    chan struct{}       // asks the heartbeat loop to write now
	beats   atomic.Int64        // heartbeats written

	// fence: the watcher serves its container's one attempt (once), whose
	// other processes end before the report is written.
	fence bool
	// stopping closes when the watcher is asked to stop (Run's ctx).
	stopping <-chan struct{}
}

// Run watches opts.Layout's commands dir and carries out every command until
// ctx is cancelled; then it stops claiming, lets running tasks finish within
// opts.Grace, cancels the rest and returns nil.
func Run(ctx context.Context, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	w := &watcher{
		opts: opts, log: opts.Logger.With("watcher", opts.WatcherID), host: host, pid: os.Getpid(),
		started:   opts.Now().UTC(),
		pending:   make(map[string]struct{}),
		inflight:  make(map[string]struct{}),
		ownerless: make(map[string]time.Time),
		done:      make(chan string, opts.Concurrency),
		running:   make(map[string]struct{}),
		kick:      make(chan struct{}, 1),
		stopping:  ctx.Done(),
	}
	l := opts.Layout
	for _, d := range []string{l.Commands(), l.Claimed(), l.Reports(), l.Watchers()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("watch: create %s: %w", d, err)
		}
	}
	if err := w.beat(); err != nil {
		return fmt.Errorf("watch: %w: is %s writable?", err, l.Watchers())
	}
	// The heartbeat outlives ctx: it must keep saying "alive" while the
	// running tasks use their grace period.
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); w.heartbeatLoop(hbCtx) }()
	defer func() {
		stopHB()
		<-hbDone
		if err := os.Remove(protocol.HeartbeatFile(l.Watchers(), opts.WatcherID)); err != nil {
			w.log.Warn("remove heartbeat", "err", err)
		}
	}()
	if opts.Task != "" {
		return w.once(ctx, opts.Task)
	}

	fsw, poll, err := w.openEvents(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while probing: nothing was claimed yet
		}
		return err
	}
	if fsw != nil {
		defer fsw.Close()
	}
	mode := "fsnotify"
	if poll > 0 {
		mode = "poll every " + poll.String()
	}
	w.log.Info("watching", "commands", l.Commands(), "concurrency", opts.Concurrency, "mode", mode)

	taskCtx, cancelTasks := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTasks()
	var g errgroup.Group

	w.recoverClaims()
	w.rescan()
	w.dispatch(taskCtx, &g)
	w.loop(ctx, taskCtx, &g, fsw, poll)

	w.log.Info("stopping: no more claims", "running", len(w.inflight), "grace", opts.Grace.String())
	grace := time.NewTimer(opts.Grace)
	defer grace.Stop()
	for len(w.inflight) > 0 {
		select {
		case id := <-w.done:
			delete(w.inflight, id)
		case <-grace.C:
			w.log.Warn("grace period over: cancelling running tasks", "running", len(w.inflight))
			cancelTasks()
		}
	}
	_ = g.Wait()
	w.log.Info("stopped")
	return nil
}

// openEvents sets up fsnotify on commands/ unless polling is forced or the
// probe shows events are not delivered. poll > 0 means: poll at that interval.
func (w *watcher) openEvents(ctx context.Context) (*fsnotify.Watcher, time.Duration, error) {
	dir := w.opts.Layout.Commands()
	if w.opts.Poll > 0 {
		return nil, w.opts.Poll, nil
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Warn("fsnotify unavailable: polling every 1s", "err", err)
		return nil, time.Second, nil
	}
	add := w.addWatch
	if add == nil {
		add = (*fsnotify.Watcher).Add
	}
	if err := add(fsw, dir); err != nil {
		fsw.Close()
		w.log.Warn("cannot watch the commands dir: polling every 1s", "dir", dir, "err", err)
		return nil, time.Second, nil
	}
	ok, err := probeEvents(ctx, fsw, dir, w.opts.WatcherID, w.opts.Probe)
	if err != nil {
		fsw.Close()
		return nil, 0, fmt.Errorf("watch: %w", err)
	}
	if !ok {
		fsw.Close()
		w.log.Warn("fsnotify events are not delivered for the commands dir (bind mount or network filesystem?): polling every 1s",
			"dir", dir, "waited", w.opts.Probe.String())
		return nil, time.Second, nil
	}
	return fsw, 0, nil
}
