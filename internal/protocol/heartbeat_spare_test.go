package protocol

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A watcher's heartbeats after the first two reuse two files, swapped at
// each write: no file is made or removed per beat, the heartbeat read is
// always the last one written, and the spare is skipped by readers.
func TestHeartbeatsReuseTheirFiles(t *testing.T) {
	dir := t.TempDir()
	inodes := map[uint64]bool{}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		h := Heartbeat{ID: "w1", Started: start, Updated: start.Add(time.Duration(i) * time.Second)}
		if err := WriteHeartbeat(dir, h); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(HeartbeatFile(dir, "w1"))
		if err != nil {
			t.Fatal(err)
		}
		if i >= 1 {
			inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
		}
		hbs, err := ReadHeartbeats(dir)
		if err != nil || len(hbs) != 1 || !hbs[0].Updated.Equal(h.Updated) {
			t.Fatalf("write %d: read %v, %v", i, hbs, err)
		}
	}
	if len(inodes) > 2 {
		t.Errorf("the heartbeat took %d files, want the same two swapped", len(inodes))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the heartbeat and its spare", len(entries))
	}
	// A spare that is a link is never written through.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(dir, ".w1.json.tmp-spare")
	if err := os.Remove(spare); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(target, spare); err != nil {
		t.Fatal(err)
	}
	if err := WriteHeartbeat(dir, Heartbeat{ID: "w1", Updated: start.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep\n" {
		t.Errorf("the file linked as the spare was written: %q", data)
	}
	if h, err := ReadHeartbeat(dir, "w1"); err != nil || !h.Updated.Equal(start.Add(time.Hour)) {
		t.Errorf("after a linked spare: %v %v", h, err)
	}
}
