package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

func TestHealthCommand(t *testing.T) {
	tests := []struct {
		name     string
		age      time.Duration // of the heartbeat; < 0 = no heartbeat file
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "fresh heartbeat", age: time.Second, wantCode: cmdutil.ExitOK, wantOut: "healthy: watcher w-1 (pid 42 on box)"},
		{name: "no heartbeat", age: -1, wantCode: cmdutil.ExitFailed, wantErr: "no watcher heartbeat in"},
		{name: "stale heartbeat", age: time.Minute, wantCode: cmdutil.ExitFailed, wantErr: "more than 15s"},
		{name: "custom max age", age: time.Minute, args: []string{"--max-age", "2m"}, wantCode: cmdutil.ExitOK, wantOut: "healthy"},
		{name: "negative max age", age: time.Second, args: []string{"--max-age", "-1s"}, wantCode: cmdutil.ExitUsage, wantErr: "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.age >= 0 {
				watchers := filepath.Join(dir, "reports", ".watchers")
				if err := os.MkdirAll(watchers, 0o755); err != nil {
					t.Fatal(err)
				}
				hb, _ := json.Marshal(map[string]any{"id": "w-1", "pid": 42, "host": "box", "updated": time.Now().Add(-tt.age), "running": []string{"t1"}})
				if err := os.WriteFile(filepath.Join(watchers, "w-1.json"), hb, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, out, stderr := run(t, nil, append([]string{"health", "--volumes", dir}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, stderr, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}
