package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/runtimetest"
)

// BenchmarkAttemptStartToHeartbeat measures, per attempt, Launch of a fresh
// container with the bind-mounted codingagent up to the agent's first
// heartbeat in its own volumes (create, wait, start, logs, the binary
// starting in the image, heartbeat seen), and the fence: from the agent's
// report in its own volumes to the report in reports/, where the
// orchestrator takes it (the agent ending its container's processes and
// exiting, the container's removal, the report read back). It reports the
// medians of at least 10 attempts: `make bench` runs one iteration, and one
// start is too noisy to compare. The image is the busybox-only one:
// nothing of codingagent is in it. The files are polled every millisecond:
// the attempt's own volumes are made by Launch, too late for a watch.
func BenchmarkAttemptStartToHeartbeat(b *testing.B) {
	cli := e2eEngine(b)
	testImages(b, cli)
	srv := llmtest.New(b, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Done.") })
	l := testLayout(b, os.Getuid(), os.Getgid())
	runID := testRunID(b, cli)
	opts := testOptions(b, busyboxImage, runID, l, os.Getuid(), os.Getgid())
	opts.Logger, opts.Env = discardLogger(), agentEnv(srv)
	ctx := b.Context()
	d, err := New(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer d.Stop(ctx)
	n := max(b.N, 10)
	starts := make([]time.Duration, 0, n)
	fences := make([]time.Duration, 0, n)
	b.ResetTimer()
	// A poll the machine's load delays past an agent's whole life sees
	// neither its heartbeat nor its report: that attempt gives no sample,
	// and more attempts are made, up to 3n.
	for i := 0; (len(starts) < n || len(fences) < n) && i < 3*n; i++ {
		b.StopTimer()
		id := fmt.Sprintf("t%d", i)
		a := benchAttempt(b, l, runID, id)
		own, err := volume.New(l.AttemptIO(runID, id, 1), "")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if err := d.Launch(ctx, a); err != nil {
			b.Fatal(err)
		}
		var beat, reported time.Time
		deadline := time.Now().Add(30 * time.Second)
		for {
			now := time.Now()
			if beat.IsZero() {
				if beats, _ := filepath.Glob(filepath.Join(own.Watchers(), "*.json")); len(beats) > 0 {
					beat = now
				}
			}
			if reported.IsZero() {
				if _, err := os.Lstat(own.ReportFile(id)); err == nil {
					reported = now
				}
			}
			if _, err := os.Lstat(l.ReportFile(id)); err == nil {
				if !reported.IsZero() {
					fences = append(fences, now.Sub(reported))
				}
				break
			}
			if now.After(deadline) {
				b.Fatal("no report in reports/ within 30s")
			}
			time.Sleep(time.Millisecond)
		}
		if !beat.IsZero() {
			starts = append(starts, beat.Sub(began))
		}
		b.StopTimer()
		poll.Until(b, 30*time.Second, "the attempt's container to go", func() bool { return len(containersOfRun(b, cli, runID)) == 0 })
		b.StartTimer()
	}
	if len(starts) < n || len(fences) < n {
		b.Fatalf("%d starts and %d fences seen in %d attempts, want %d of each: the machine is too loaded to poll every millisecond", len(starts), len(fences), 3*n, n)
	}
	slices.Sort(starts)
	slices.Sort(fences)
	b.ReportMetric(float64(starts[len(starts)/2].Milliseconds()), "ms-median-start")
	b.ReportMetric(float64(starts[len(starts)-1].Milliseconds()), "ms-max-start")
	b.ReportMetric(float64(fences[len(fences)/2].Milliseconds()), "ms-median-fence")
	b.ReportMetric(float64(fences[len(fences)-1].Milliseconds()), "ms-max-fence")
	b.Logf("image %s: start median %s, max %s; fence median %s, max %s over %d attempts", busyboxImage,
		starts[len(starts)/2].Round(time.Millisecond), starts[len(starts)-1].Round(time.Millisecond),
		fences[len(fences)/2].Round(time.Millisecond), fences[len(fences)-1].Round(time.Millisecond), n)
}

// benchAttempt is newAttempt for a benchmark.
func benchAttempt(b *testing.B, l volume.Layout, runID, id string) Attempt {
	a := Attempt{RunID: runID, TaskID: id, Attempt: 1, Dir: l.Attempt(runID, id, 1), Rel: l.AttemptRel(runID, id, 1)}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		b.Fatal(err)
	}
	runtimetest.WriteCommand(b, l, a)
	return a
}

// BenchmarkFourLaunches: four attempts launched one after the other (as
// planagent did before) and all at once (as it does for --parallel 4),
// timed from the first Launch call to the last return.
func BenchmarkFourLaunchesSerial(b *testing.B)   { benchFourLaunches(b, false) }
func BenchmarkFourLaunchesTogether(b *testing.B) { benchFourLaunches(b, true) }

func benchFourLaunches(b *testing.B, together bool) {
	cli := e2eEngine(b)
	testImages(b, cli)
	srv := llmtest.New(b, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Done.") })
	l := testLayout(b, os.Getuid(), os.Getgid())
	runID := testRunID(b, cli)
	opts := testOptions(b, busyboxImage, runID, l, os.Getuid(), os.Getgid())
	opts.Logger, opts.Env = discardLogger(), agentEnv(srv)
	ctx := b.Context()
	d, err := New(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer d.Stop(ctx)
	var total time.Duration
	round := 0
	for b.Loop() {
		b.StopTimer()
		var as []Attempt
		for i := range 4 {
			as = append(as, benchAttempt(b, l, runID, fmt.Sprintf("r%dt%d", round, i)))
		}
		round++
		b.StartTimer()
		began := time.Now()
		errs := make([]error, len(as))
		if together {
			var wg sync.WaitGroup
			for i, a := range as {
				wg.Go(func() { errs[i] = d.Launch(ctx, a) })
			}
			wg.Wait()
		} else {
			for i, a := range as {
				errs[i] = d.Launch(ctx, a)
			}
		}
		total += time.Since(began)
		b.StopTimer()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		poll.Until(b, time.Minute, "the attempts' containers to go", func() bool { return len(containersOfRun(b, cli, runID)) == 0 })
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(round), "ms-4-launches")
}
