package watch

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Healthy returns the freshest heartbeat under dir when it is at most maxAge
// old, and ErrUnhealthy (wrapped, with what was found) otherwise.
func Healthy(dir string, now time.Time, maxAge time.Duration) (protocol.Heartbeat, error) {
	hbs, err := protocol.ReadHeartbeats(dir)
	if err != nil {
		return protocol.Heartbeat{}, err
	}
	if len(hbs) == 0 {
		return protocol.Heartbeat{}, fmt.Errorf("%w: no watcher heartbeat in %s: is `codingagent watch` running on these volumes?", ErrUnhealthy, dir)
	}
	h := hbs[0]
	if !h.Fresh(now, maxAge) {
		return h, fmt.Errorf("%w: newest heartbeat (watcher %s) is %s old, more than %s: the watcher is stuck or gone",
			ErrUnhealthy, h.ID, now.Sub(h.Updated).Round(time.Millisecond), maxAge)
	}
	return h, nil
}

// beat writes this watcher's heartbeat with what it is running now.
func (w *watcher) beat() error {
	w.mu.Lock()
	running := make([]string, 0, len(w.running))
	for id := range w.running {
		running = append(running, id)
	}
	w.mu.Unlock()
	slices.Sort(running)
	return protocol.WriteHeartbeat(w.opts.Layout.Watchers(), protocol.Heartbeat{
		ID: w.opts.WatcherID, PID: w.pid, Host: w.host,
		Started: w.started, Updated: w.opts.Now().UTC(), Running: running,
	})
}

// heartbeatLoop rewrites the heartbeat every interval, and at once when the
// set of running tasks changes, until ctx is cancelled.
func (w *watcher) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
		if err := w.beat(); err != nil {
			w.log.Error("heartbeat", "err", err)
		}
	}
}
