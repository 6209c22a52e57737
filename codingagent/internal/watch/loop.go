package watch

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sync/errgroup"
)

// loop is the one goroutine that owns pending, inflight and ownerless: it
// turns events, poll ticks, reconcile ticks and finished tasks into claims
// until ctx is cancelled. The concurrency limit is the size of inflight,
// checked before a claim, so a busy watcher never claims what it cannot
// start (errgroup.SetLimit would block this loop instead).
func (w *watcher) loop(ctx, taskCtx context.Context, g *errgroup.Group, fsw *fsnotify.Watcher, poll time.Duration) {
	var evs chan fsnotify.Event
	var errs chan error
	if fsw != nil {
		evs, errs = fsw.Events, fsw.Errors
	}
	var pollC <-chan time.Time
	if poll > 0 {
		t := time.NewTicker(poll)
		defer t.Stop()
		pollC = t.C
	}
	reconcile := time.NewTicker(w.opts.Reconcile)
	defer reconcile.Stop()

	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-evs:
			if !ok {
				w.log.Warn("fsnotify closed its event channel: polling every 1s")
				evs, errs = nil, nil
				t := time.NewTicker(time.Second)
				defer t.Stop()
				pollC = t.C
				continue
			}
			if !isArrival(ev.Op) {
				continue
			}
			name := filepath.Base(ev.Name)
			switch id, kind := classify(name); kind {
			case nameCommand:
				w.pending[id] = struct{}{}
			case nameInvalid:
				w.setAside(name)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if isOverflow(err) {
				w.log.Warn("fsnotify queue overflowed: rescanning the commands dir")
				w.rescan()
			} else {
				w.log.Warn("fsnotify error", "err", err)
			}
		case <-pollC:
			w.rescan()
		case <-reconcile.C:
			w.recoverClaims()
			w.rescan()
		case id := <-w.done:
			delete(w.inflight, id)
		}
		w.dispatch(taskCtx, g)
	}
}

// rescan adds every command file present to pending and sets invalid names aside.
func (w *watcher) rescan() {
	ids, invalid, err := scan(w.opts.Layout.Commands())
	if err != nil {
		w.log.Error("scan", "err", err)
		return
	}
	for _, id := range ids {
		w.pending[id] = struct{}{}
	}
	for _, name := range invalid {
		w.setAside(name)
	}
}

// dispatch claims pending commands while there are free slots.
func (w *watcher) dispatch(taskCtx context.Context, g *errgroup.Group) {
	if len(w.pending) == 0 || len(w.inflight) >= w.opts.Concurrency {
		return
	}
	ids := make([]string, 0, len(w.pending))
	for id := range w.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if len(w.inflight) >= w.opts.Concurrency {
			return
		}
		if _, busy := w.inflight[id]; busy {
			continue // a new command for an id we are still running: after it
		}
		res, err := w.claim(id)
		if err != nil {
			w.log.Error("claim", "task", id, "err", err)
			continue
		}
		if res == claimBusy {
			continue // retried when a task ends or at the next reconcile
		}
		delete(w.pending, id)
		if res == claimLost {
			continue
		}
		w.inflight[id] = struct{}{}
		w.setRunning(id, true)
		g.Go(func() error {
			defer func() { w.done <- id }()
			defer w.setRunning(id, false)
			_ = w.process(taskCtx, id) // a report not written is logged; the claim stays for a retake
			return nil
		})
	}
}

func (w *watcher) setRunning(id string, on bool) {
	w.mu.Lock()
	if on {
		w.running[id] = struct{}{}
	} else {
		delete(w.running, id)
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}
