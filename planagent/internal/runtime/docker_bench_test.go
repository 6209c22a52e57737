package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/volume"
)

// BenchmarkAttemptStartToHeartbeat measures, per attempt, Launch of a fresh
// container with the bind-mounted codingagent up to the agent's first
// heartbeat (create, wait, start, logs, the binary starting in the image,
// heartbeat seen), reporting the median of at least 10 attempts: `make
// bench` runs one iteration, and one start is too noisy to compare. The
// image is the busybox-only one: nothing of codingagent is in it.
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
	d, err := NewDocker(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer d.Stop(ctx)
	n := max(b.N, 10)
	samples := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := range n {
		b.StopTimer()
		id := fmt.Sprintf("t%d", i)
		a := benchAttempt(b, l, runID, id)
		// The heartbeat file's creation is the event: the attempt may be
		// over (and the file gone) before Launch returns under load.
		w, err := fsnotify.NewWatcher()
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Add(l.Watchers()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if err := d.Launch(ctx, a); err != nil {
			b.Fatal(err)
		}
		timeout := time.After(30 * time.Second)
	wait:
		for {
			select {
			case ev := <-w.Events:
				name := filepath.Base(ev.Name)
				if ev.Op.Has(fsnotify.Create) && strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
					break wait
				}
			case err := <-w.Errors:
				b.Fatal(err)
			case <-timeout:
				b.Fatal("no heartbeat within 30s")
			}
		}
		samples = append(samples, time.Since(began))
		b.StopTimer()
		_ = w.Close()
		// The attempt completes and its container goes before the next.
		poll.Until(b, 30*time.Second, "the attempt's container to go", func() bool { return len(containersOfRun(b, cli, runID)) == 0 })
		b.StartTimer()
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Milliseconds()), "ms-median-start")
	b.ReportMetric(float64(samples[len(samples)-1].Milliseconds()), "ms-max-start")
	b.Logf("image %s: median %s, max %s over %d attempts", busyboxImage, samples[len(samples)/2].Round(time.Millisecond),
		samples[len(samples)-1].Round(time.Millisecond), n)
}

// benchAttempt is newAttempt for a benchmark.
func benchAttempt(b *testing.B, l volume.Layout, runID, id string) Attempt {
	a := Attempt{RunID: runID, TaskID: id, Attempt: 1, Dir: l.Attempt(runID, id, 1), Rel: l.AttemptRel(runID, id, 1)}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		b.Fatal(err)
	}
	writeTestCommand(b, l, a)
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
	d, err := NewDocker(ctx, opts)
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
