package webui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// BenchmarkStreamUpdate is the web view's latency: from a saved state
// (what the orchestrator writes after every transition) to the "run" event
// at a client of the stream, through fsnotify, the throttle, the re-read
// and the encoding; for a small run and a 1000-task one.
func BenchmarkStreamUpdate(b *testing.B) {
	for _, n := range []int{3, 1000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			f := newFixture(b)
			for i := len(f.st.Tasks); i < n; i++ {
				id := fmt.Sprintf("t%04d", i)
				f.st.Tasks = append(f.st.Tasks, taskgraph.Task{ID: id, Title: "task " + id, Description: "do " + id,
					Dependencies: []string{f.st.Tasks[i-1].ID}, Status: taskgraph.Pending})
				f.st.Info[id] = &runrecord.TaskInfo{}
			}
			if err := f.st.Save(f.l, time.Now()); err != nil {
				b.Fatal(err)
			}
			base := f.serve(b)
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/runs/"+runID+"/stream", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			ch := readEvents(resp.Body)
			next(b, ch, "run")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Samples are spaced past the throttle gap after the previous
				// update, so each measures one change on its own.
				time.Sleep(2 * throttle)
				start := time.Now()
				if err := f.st.Save(f.l, start); err != nil {
					b.Fatal(err)
				}
				next(b, ch, "run")
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}
