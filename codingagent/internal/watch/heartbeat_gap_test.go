package watch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Quick tasks change the running set twice each: the heartbeats they ask
// for come at most one per kickGap, and the last state is still written.
func TestHeartbeatsOfQuickTasksAreCoalesced(t *testing.T) {
	l := newLayout(t)
	w := &watcher{
		opts:    Options{Layout: l, WatcherID: "w-gap", Heartbeat: time.Hour, Now: time.Now},
		running: map[string]struct{}{},
		kick:    make(chan struct{}, 1),
		started: time.Now(),
	}
	w.log = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); w.heartbeatLoop(ctx) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	for range 20 {
		w.setRunning("t1", true)
		time.Sleep(2 * time.Millisecond)
		w.setRunning("t1", false)
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(start)
	eventually(t, "the heartbeat of the last state (nothing running)", func() bool {
		h, err := protocol.ReadHeartbeat(l.Watchers(), "w-gap")
		return err == nil && len(h.Running) == 0 && w.beats.Load() > 0
	})
	// One at the first change, then one per kickGap at most, and the last.
	if most := int64(took/kickGap) + 2; w.beats.Load() > most {
		t.Errorf("%d heartbeats for 40 changes in %s, want at most %d", w.beats.Load(), took.Round(time.Millisecond), most)
	}
}
