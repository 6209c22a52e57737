package watch

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/codeagent/codeagent/internal/protocol"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "first paragraph", in: "Added the endpoint.\n\nDetails follow.", want: "Added the endpoint."},
		{name: "lines joined", in: "  Added the\nendpoint  and tests.\n\nMore.", want: "Added the endpoint and tests."},
		{name: "empty", in: " \n ", want: ""},
		{name: "bounded", in: strings.Repeat("word ", 100), want: strings.Repeat("word ", 60)[:summaryLimit] + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.in); got != tt.want {
				t.Errorf("summarize = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		wantID string
		want   nameKind
	}{
		{"t1.md", "t1", nameCommand},
		{"build-api_v2.1.md", "build-api_v2.1", nameCommand},
		{".t1.md.tmp-123", "", nameIgnored},
		{".claimed", "", nameIgnored},
		{".probe-w-1", "", nameIgnored},
		{"t1.txt", "", nameIgnored},
		{"t1.md.swp", "", nameIgnored},
		{"bad name.md", "", nameInvalid},
		{".md", "", nameIgnored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, kind := classify(tt.name)
			if id != tt.wantID || kind != tt.want {
				t.Errorf("classify(%q) = %q, %d; want %q, %d", tt.name, id, kind, tt.wantID, tt.want)
			}
		})
	}
}

func TestSalvageIDs(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantRun     string
		wantAttempt int
	}{
		{name: "broken yaml", in: "---\nrun_id: r9\nattempt: 2\ntitle: [broken\n---\n", wantRun: unknownRun, wantAttempt: 1},
		{name: "valid yaml, other field bad", in: "---\nrun_id: r9\nattempt: 2\nbogus: 1\n---\nbody", wantRun: "r9", wantAttempt: 2},
		{name: "crlf and bom", in: "\ufeff---\r\nrun_id: r9\r\nattempt: 3\r\n---\r\n", wantRun: "r9", wantAttempt: 3},
		{name: "invalid run id", in: "---\nrun_id: ../x\nattempt: 0\n---\n", wantRun: unknownRun, wantAttempt: 1},
		{name: "no front matter", in: "garbage", wantRun: unknownRun, wantAttempt: 1},
		{name: "unterminated", in: "---\nrun_id: r9\n", wantRun: unknownRun, wantAttempt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, attempt := salvageIDs([]byte(tt.in))
			if run != tt.wantRun || attempt != tt.wantAttempt {
				t.Errorf("salvageIDs = %q, %d; want %q, %d", run, attempt, tt.wantRun, tt.wantAttempt)
			}
		})
	}
}

func TestHealthy(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name    string
		beats   []protocol.Heartbeat
		wantID  string
		wantErr string
	}{
		{name: "none", wantErr: "no watcher heartbeat"},
		{name: "stale", beats: []protocol.Heartbeat{{ID: "w1", Updated: now.Add(-time.Minute)}}, wantErr: "newest heartbeat (watcher w1) is 1m0s old"},
		{name: "fresh", beats: []protocol.Heartbeat{{ID: "w1", Updated: now.Add(-time.Second)}}, wantID: "w1"},
		{name: "freshest of several", beats: []protocol.Heartbeat{{ID: "old", Updated: now.Add(-time.Hour)}, {ID: "new", Updated: now}}, wantID: "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			for _, h := range tt.beats {
				if err := protocol.WriteHeartbeat(l.Watchers(), h); err != nil {
					t.Fatal(err)
				}
			}
			h, err := Healthy(l.Watchers(), now, 15*time.Second)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrUnhealthy) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Healthy = %v, want ErrUnhealthy containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || h.ID != tt.wantID {
				t.Fatalf("Healthy = %+v, %v; want watcher %s", h, err, tt.wantID)
			}
		})
	}
}

func TestOptionsValidation(t *testing.T) {
	l := newLayout(t)
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{name: "no runner", opts: Options{Layout: l}, want: "Runner is required"},
		{name: "no layout", opts: Options{Runner: noopRunner{}}, want: "Layout is required"},
		{name: "bad watcher id", opts: Options{Layout: l, Runner: noopRunner{}, WatcherID: "a/b"}, want: "watcher id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(t.Context(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Where fsnotify events never arrive (a bind mount of Docker Desktop, NFS),
// the probe times out and the watcher polls.
func TestProbeFallsBackToPolling(t *testing.T) {
	l := newLayout(t)
	opts, err := Options{Layout: l, Runner: noopRunner{}, Logger: testLogger(t), Probe: 100 * time.Millisecond}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{opts: opts, log: opts.Logger, addWatch: func(*fsnotify.Watcher, string) error { return nil }}
	fsw, poll, err := w.openEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fsw != nil || poll != time.Second {
		t.Fatalf("openEvents without events: watcher %v, poll %s; want polling every 1s", fsw, poll)
	}
}

func TestProbeSeesEvents(t *testing.T) {
	l := newLayout(t)
	opts, err := Options{Layout: l, Runner: noopRunner{}, Logger: testLogger(t)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{opts: opts, log: opts.Logger}
	fsw, poll, err := w.openEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fsw == nil || poll != 0 {
		t.Fatalf("openEvents on a local dir: watcher %v, poll %s; want fsnotify", fsw, poll)
	}
	fsw.Close()
	if probes, _ := filepath.Glob(filepath.Join(l.Commands(), ".probe-*")); len(probes) > 0 {
		t.Errorf("probe file left behind: %v", probes)
	}
}
