package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Heartbeat is the content of reports/.watchers/<id>.json: proof that a
// watcher (or, in the kubernetes runtime, planagent carrying an attempt's
// pod) is alive, and what it is running. Whoever writes one rewrites it
// every few seconds with Updated set to the time of writing.
type Heartbeat struct {
	ID      string    `json:"id"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	Running []string  `json:"running"`
}

// BeatSince reports whether h was written at or after t. It is the one
// judgement of a heartbeat's freshness: every reader (codingagent's health
// check and claim recovery, planagent's runtimes and orchestrator) judges
// by the Updated time its writer put in the file, never by the file's
// modification time, which copies, clock-less filesystems and coarse
// timestamps would change or blur.
func (h Heartbeat) BeatSince(t time.Time) bool { return !h.Updated.Before(t) }

// Fresh reports whether h was written within maxAge of now.
func (h Heartbeat) Fresh(now time.Time, maxAge time.Duration) bool {
	return h.BeatSince(now.Add(-maxAge))
}

// HeartbeatFile is the heartbeat file of watcher id in dir.
func HeartbeatFile(dir, id string) string { return filepath.Join(dir, id+".json") }

// WriteHeartbeat writes h as dir's heartbeat file of h.ID through a temp
// file (".<id>.json.tmp-*", which readers skip) and a rename, without
// fsync: a reader never sees a torn heartbeat, and one lost to a power cut
// is judged stale and rewritten within seconds.
func WriteHeartbeat(dir string, h Heartbeat) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("encode heartbeat of watcher %s: %w", h.ID, err)
	}
	path := HeartbeatFile(dir, h.ID)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write heartbeat of watcher %s: %w", h.ID, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write heartbeat of watcher %s: %w", h.ID, err)
	}
	return nil
}

// ReadHeartbeat reads the heartbeat of watcher id from dir. A missing file
// is fs.ErrNotExist.
func ReadHeartbeat(dir, id string) (Heartbeat, error) {
	data, err := ReadRegular(HeartbeatFile(dir, id), MaxFileSize)
	if err != nil {
		return Heartbeat{}, err
	}
	var h Heartbeat
	if err := json.Unmarshal(data, &h); err != nil {
		return Heartbeat{}, fmt.Errorf("heartbeat %s: %w", HeartbeatFile(dir, id), err)
	}
	return h, nil
}

// ReadHeartbeats returns every readable heartbeat under dir, newest first.
// Temp files, directories and unreadable files are skipped: a torn file is
// rewritten within seconds. A missing dir has none.
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
		if e.IsDir() || IsTempName(name) || !strings.HasSuffix(name, ".json") {
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

// LatestHeartbeat returns the newest readable heartbeat under dir; false
// when there is none (or dir cannot be read: the caller decides whether
// that is an error). Some watcher beat since t exactly when the latest did.
func LatestHeartbeat(dir string) (Heartbeat, bool) {
	hbs, err := ReadHeartbeats(dir)
	if err != nil || len(hbs) == 0 {
		return Heartbeat{}, false
	}
	return hbs[0], true
}
