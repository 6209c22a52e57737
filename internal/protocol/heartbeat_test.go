package protocol

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Freshness is judged on the time the heartbeat says it was written, at
// most maxAge before now; the file's modification time does not count.
func TestHeartbeatFresh(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		updated time.Time
		want    bool
	}{
		{"just written", now, true},
		{"at the limit", now.Add(-15 * time.Second), true},
		{"past the limit", now.Add(-15*time.Second - time.Nanosecond), false},
		{"from the future (another clock)", now.Add(time.Second), true},
		{"never written", time.Time{}, false},
	}
	for _, tt := range tests {
		if got := (Heartbeat{Updated: tt.updated}).Fresh(now, 15*time.Second); got != tt.want {
			t.Errorf("%s: Fresh = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Written and read back; the newest first; temp files, directories,
// other names and torn files are not heartbeats.
func TestHeartbeatFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now().UTC()
	if _, ok := LatestHeartbeat(filepath.Join(dir, "missing")); ok {
		t.Error("a missing dir has a heartbeat")
	}
	for _, h := range []Heartbeat{{ID: "old", Updated: now.Add(-time.Hour)}, {ID: "new", PID: 7, Host: "box", Updated: now, Running: []string{"t1"}}} {
		if err := WriteHeartbeat(dir, h); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{".new.json.tmp-1": `{"id":"tmp","updated":"2100-01-01T00:00:00Z"}`,
		"torn.json": `{"id":"to`, "notes.txt": `{"id":"txt","updated":"2100-01-01T00:00:00Z"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	hbs, err := ReadHeartbeats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(hbs) != 2 || hbs[0].ID != "new" || hbs[1].ID != "old" {
		t.Fatalf("ReadHeartbeats = %+v, want new then old", hbs)
	}
	h, ok := LatestHeartbeat(dir)
	if !ok || h.ID != "new" || h.PID != 7 || h.Host != "box" || !h.Updated.Equal(now) || len(h.Running) != 1 {
		t.Errorf("LatestHeartbeat = %+v, %v", h, ok)
	}
	if !h.Fresh(now.Add(time.Second), 2*time.Second) || h.BeatSince(now.Add(time.Millisecond)) {
		t.Errorf("the latest heartbeat's freshness is wrong: %+v", h)
	}
	if _, err := ReadHeartbeat(dir, "gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadHeartbeat(gone) = %v, want not-exist", err)
	}
}
