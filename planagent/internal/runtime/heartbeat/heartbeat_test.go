package heartbeat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
)

// A heartbeat is fresh by the time it says it was written, whatever the
// file's modification time (a copy, a restore or a touch changes that): the
// judgement codingagent's health check makes too.
func TestAlive(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Minute)
	tests := []struct {
		name  string
		files map[string]time.Time // name → the heartbeat's updated; the file's mtime is the other one
		noDir bool
		want  bool
	}{
		{"fresh heartbeat in an old file", map[string]time.Time{"w1.json": now}, false, true},
		{"stale heartbeat in a new file", map[string]time.Time{"w1.json": old}, false, false},
		{"one fresh among stale", map[string]time.Time{"w1.json": old, "w2.json": now.Add(-time.Second)}, false, true},
		{"temp file is not a heartbeat", map[string]time.Time{".w1.json.tmp": now, ".w2.json": now}, false, false},
		{"other extension", map[string]time.Time{"w1.txt": now}, false, false},
		{"no time in it", map[string]time.Time{"w1.json": {}}, false, false},
		{"empty dir", nil, false, false},
		{"no dir", nil, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".watchers")
			if !tc.noDir {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, updated := range tc.files {
				p := filepath.Join(dir, name)
				data, err := json.Marshal(protocol.Heartbeat{ID: "w", Updated: updated})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				mtime := old // the opposite of what the heartbeat says
				if updated.Before(now.Add(-15 * time.Second)) {
					mtime = now
				}
				if err := os.Chtimes(p, mtime, mtime); err != nil {
					t.Fatal(err)
				}
			}
			if got := Alive(dir, 15*time.Second); got != tc.want {
				t.Errorf("Alive = %v, want %v", got, tc.want)
			}
		})
	}
}

// Keep writes a fresh heartbeat while its attempt is carried and removes
// it when the carrier lets go.
func TestKeep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".watchers")
	carried := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Keep(t.Context(), dir, "kube-job1", "job1", carried)
	}()
	if !poll.Wait(t.Context(), 30*time.Second, func() bool { return Alive(dir, time.Minute) }) {
		t.Fatal("no fresh heartbeat while carried")
	}
	h, ok := protocol.LatestHeartbeat(dir)
	if !ok || h.ID != "kube-job1" || h.Host != "job1" {
		t.Errorf("heartbeat = %+v, %v", h, ok)
	}
	close(carried)
	<-done
	if _, err := os.Stat(protocol.HeartbeatFile(dir, "kube-job1")); !os.IsNotExist(err) {
		t.Errorf("the heartbeat outlived its attempt: %v", err)
	}
}
