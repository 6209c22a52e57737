package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Heartbeat is the content of reports/.watchers/<id>.json: proof that a
// watcher is alive and what it is running.
type Heartbeat struct {
	ID      string    `json:"id"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	Running []string  `json:"running"`
}

// Fresh reports whether the heartbeat was updated within maxAge of now.
func (h Heartbeat) Fresh(now time.Time, maxAge time.Duration) bool {
	return now.Sub(h.Updated) <= maxAge
}

func heartbeatFile(dir, id string) string { return filepath.Join(dir, id+".json") }

func writeHeartbeat(dir string, h Heartbeat) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("encode heartbeat of watcher %s: %w", h.ID, err)
	}
	if err := replaceFile(heartbeatFile(dir, h.ID), data); err != nil {
		return fmt.Errorf("write heartbeat of watcher %s: %w", h.ID, err)
	}
	return nil
}

// ReadHeartbeat reads the heartbeat of watcher id from dir. A missing file
// is fs.ErrNotExist.
func ReadHeartbeat(dir, id string) (Heartbeat, error) {
	data, err := protocol.ReadRegular(heartbeatFile(dir, id), protocol.MaxFileSize)
	if err != nil {
		return Heartbeat{}, err
	}
	var h Heartbeat
	if err := json.Unmarshal(data, &h); err != nil {
		return Heartbeat{}, fmt.Errorf("heartbeat %s: %w", heartbeatFile(dir, id), err)
	}
	return h, nil
}

// ReadHeartbeats returns every readable heartbeat under dir, newest first.
// Unreadable files are skipped: a torn file is rewritten within seconds.
func ReadHeartbeats(dir string) ([]Heartbeat, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read watcher heartbeats in %s: %w", dir, err)
	}
	var hbs []Heartbeat
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || protocol.IsTempName(name) || !strings.HasSuffix(name, ".json") {
			continue
		}
		h, err := ReadHeartbeat(dir, strings.TrimSuffix(name, ".json"))
		if err != nil {
			continue
		}
		hbs = append(hbs, h)
	}
	slices.SortFunc(hbs, func(a, b Heartbeat) int { return b.Updated.Compare(a.Updated) })
	return hbs, nil
}

// Healthy returns the freshest heartbeat under dir when it is at most maxAge
// old, and ErrUnhealthy (wrapped, with what was found) otherwise.
func Healthy(dir string, now time.Time, maxAge time.Duration) (Heartbeat, error) {
	hbs, err := ReadHeartbeats(dir)
	if err != nil {
		return Heartbeat{}, err
	}
	if len(hbs) == 0 {
		return Heartbeat{}, fmt.Errorf("%w: no watcher heartbeat in %s: is `codingagent watch` running on these volumes?", ErrUnhealthy, dir)
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
	return writeHeartbeat(w.opts.Layout.Watchers(), Heartbeat{
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
