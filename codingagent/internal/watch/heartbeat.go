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
	w.beats.Add(1)
	return protocol.WriteHeartbeat(w.opts.Layout.Watchers(), protocol.Heartbeat{
		ID: w.opts.WatcherID, PID: w.pid, Host: w.host,
		Started: w.started, Updated: w.opts.Now().UTC(), Running: running,
	})
}

// kickGap is the least time between two heartbeats asked for by changes
// of the running tasks: in a quick chain they change twice per task, and
// each heartbeat is a new file (a millisecond on a virtual disk), while
// only `codingagent health` shows the running tasks.
const kickGap = 250 * time.Millisecond

// heartbeatLoop rewrites the heartbeat every interval, and soon after the
// set of running tasks changes (at once, or kickGap after the heartbeat
// before), until ctx is cancelled.
func (w *watcher) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.Heartbeat)
	defer t.Stop()
	var last time.Time
	var later <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-later:
		case <-w.kick:
			if wait := kickGap - time.Since(last); wait > 0 {
				if later == nil {
					later = time.After(wait)
				}
				continue
			}
		}
		later = nil
		if err := w.beat(); err != nil {
			w.log.Error("heartbeat", "err", err)
		}
		last = time.Now()
	}
}
