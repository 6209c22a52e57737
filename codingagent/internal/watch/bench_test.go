package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
)

// stampRunner records when each command reached the runner.
type stampRunner struct{ at chan time.Time }

func (r stampRunner) Run(context.Context, *protocol.Command, string, events.Sink) (*protocol.Report, error) {
	r.at <- time.Now()
	return &protocol.Report{Status: protocol.StatusCompleted, Body: "done"}, nil
}

// BenchmarkPickup measures the latency from the rename of a complete command
// file into commands/ (what an atomic writer does) to the runner being
// called: the fsnotify event, the claim (rename into .claimed/), the owner
// file, parsing and the context layers. It is an upper bound of
// rename-to-claim.
func BenchmarkPickup(b *testing.B) {
	l := newLayout(b)
	at := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Layout: l, Runner: stampRunner{at: at}}) }()
	defer func() { cancel(); <-done }()
	eventually(b, "heartbeat", func() bool {
		hbs, _ := protocol.ReadHeartbeats(l.Watchers())
		return len(hbs) == 1
	})

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		id := fmt.Sprintf("b%d", i)
		data, err := command(id, 1).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		tmp := filepath.Join(l.Commands(), "."+id+".md.tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := os.Rename(tmp, l.CommandFile(id)); err != nil {
			b.Fatal(err)
		}
		select {
		case t := <-at:
			lat = append(lat, t.Sub(start))
		case <-time.After(testWait):
			b.Fatalf("command %s not picked up within %s", id, testWait)
		}
		b.StopTimer()
		// The next command must not share the watcher with this one's report.
		eventually(b, "report "+id, func() bool { return exists(l.ReportFile(id)) && !exists(filepath.Join(l.Claimed(), id+".md")) })
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*95)/100].Microseconds())/1000, "p95-ms")
}
