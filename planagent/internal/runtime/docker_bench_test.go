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
// start is too noisy to compare. It measures the real image (`make image`)
// when it is built, since that is the figure the README quotes, and the
// stand-in watcher otherwise.
func BenchmarkStartToHeartbeat(b *testing.B) {
	cli := engine(b)
	image := DefaultImage
	if _, err := cli.ImageInspect(context.Background(), image); err != nil {
		b.Logf("%s not available (%v): measuring the stand-in watcher image; run `make image` for the real figure", image, err)
		image = testWatcherImage(b, cli)
	}
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
	b.Logf("image %s: median %s, max %s over %d starts", image, samples[len(samples)/2].Round(time.Millisecond),
		samples[len(samples)-1].Round(time.Millisecond), n)
}
