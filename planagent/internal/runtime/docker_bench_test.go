package runtime

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartToHeartbeat measures Start of a fresh container up to its
// first heartbeat (create, wait, start, logs, heartbeat seen), reporting the
// median of at least 10 starts: `make bench` runs one iteration, and one
// start is too noisy to compare.
func BenchmarkStartToHeartbeat(b *testing.B) {
	cli := engine(b)
	image := testWatcherImage(b, cli)
	l := testLayout(b, os.Getuid(), os.Getgid())
	runID := testRunID(b, cli)
	n := max(b.N, 10)
	samples := make([]time.Duration, 0, n)
	ctx := context.Background()
	b.ResetTimer()
	for i := range n {
		opts := testOptions(b, image, fmt.Sprintf("%s-%d", runID, i), l, os.Getuid(), os.Getgid(), nil)
		opts.Logger = discardLogger()
		d, err := NewDocker(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		began := time.Now()
		if err := d.Start(ctx); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(began))
		b.StopTimer()
		if err := d.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		_ = d.Close()
		b.StartTimer()
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Milliseconds()), "ms-median-start")
	b.ReportMetric(float64(samples[len(samples)-1].Milliseconds()), "ms-max-start")
}
