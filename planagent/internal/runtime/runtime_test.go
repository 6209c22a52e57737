package runtime

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestAlive(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		files map[string]time.Time // name → mtime
		noDir bool
		want  bool
	}{
		{"fresh heartbeat", map[string]time.Time{"w1.json": now}, false, true},
		{"stale heartbeat", map[string]time.Time{"w1.json": now.Add(-time.Minute)}, false, false},
		{"one fresh among stale", map[string]time.Time{"w1.json": now.Add(-time.Minute), "w2.json": now.Add(-time.Second)}, false, true},
		{"temp file is not a heartbeat", map[string]time.Time{".w1.json.tmp": now, ".w2.json": now}, false, false},
		{"other extension", map[string]time.Time{"w1.txt": now}, false, false},
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
			for name, mtime := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
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
