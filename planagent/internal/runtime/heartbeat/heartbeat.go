// Package heartbeat is how the container runtimes tell a live watcher
// from a dead one on the host, and how they keep a heartbeat there for an
// agent whose own heartbeat is where planagent does not look (a pod, a
// container's own volumes).
package heartbeat

import (
	"context"
	"os"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Alive reports whether some heartbeat in watchersDir (<watcher-id>.json)
// was written within maxAge, i.e. a live watcher (compose, another
// terminal, an attempt's container or pod) serves the volumes. Freshness is
// protocol.Heartbeat's, judged on the time the heartbeat says it was
// written, as codingagent's health check judges it.
func Alive(watchersDir string, maxAge time.Duration) bool {
	return Since(watchersDir, time.Now().Add(-maxAge))
}

// Since reports whether some heartbeat in watchersDir was written at or
// after since. A missing or unreadable dir has no heartbeat: the caller
// decides whether that is an error.
func Since(watchersDir string, since time.Time) bool {
	h, ok := protocol.LatestHeartbeat(watchersDir)
	return ok && h.BeatSince(since)
}

// Keep writes heartbeat id (of host) into dir every few seconds until ctx
// ends or carried closes, then removes it: the liveness of an attempt
// whose agent writes its own heartbeat where planagent does not look (a
// pod, a container's own volumes).
func Keep(ctx context.Context, dir, id, host string, carried <-chan struct{}) {
	defer os.Remove(protocol.HeartbeatFile(dir, id))
	started := time.Now().UTC()
	beat := func() {
		_ = os.MkdirAll(dir, 0o755)
		_ = protocol.WriteHeartbeat(dir, protocol.Heartbeat{ID: id, Host: host, Started: started, Updated: time.Now().UTC()})
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		beat()
		select {
		case <-ctx.Done():
			return
		case <-carried:
			return
		case <-t.C:
		}
	}
}
