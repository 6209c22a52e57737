package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// benchAgentTime is the simulated agent's time per attempt: the figures
// are then this plus the orchestration's share. 2 s is a container's start
// and one short model turn, well under what a real attempt costs (tens of
// seconds of model time), so the ratio is an upper bound of what a user
// sees; extra-ms, three minus one, is the orchestration's added wall time
// whatever the agent's.
const benchAgentTime = 2 * time.Second

// BenchmarkBestOfThree is the wall time of one task of three attempts
// under the parallel policy at --parallel 3 against the same task with one
// attempt, on a real checkpoint repository (a copy per attempt, the
// squash, the acceptance command in a fresh copy of each result, the
// ranking, the merge, the losers kept as refs), each attempt's agent
// taking benchAgentTime on its own goroutine: ms-one and ms-three are the
// medians of the iterations, ratio three over one (goal ≤ 1.2), extra-ms
// the difference.
// judging-ms-per-attempt is the median, over the three attempts of every
// iteration, of the time from an attempt's report to its verdict (squash,
// acceptance copy, the acceptance command "true" run by the shell): what
// judging by running code costs each attempt.
func BenchmarkBestOfThree(b *testing.B) {
	var one, three, judging []time.Duration
	for b.Loop() {
		d, _ := benchAttempts(b, 1)
		one = append(one, d)
		d, judged := benchAttempts(b, 3)
		three = append(three, d)
		judging = append(judging, judged...)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// An iteration is two runs and their set-ups: its time is no figure.
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(one)), "ms-one")
	b.ReportMetric(ms(median(three)), "ms-three")
	b.ReportMetric(float64(median(three))/float64(median(one)), "ratio")
	b.ReportMetric(ms(median(three)-median(one)), "extra-ms")
	b.ReportMetric(ms(median(judging)), "judging-ms-per-attempt")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// passedRE is the log line of an attempt of several whose acceptance
// commands passed on its own result (several.go's onChecked).
var passedRE = regexp.MustCompile(`attempt (\d+) passed its acceptance commands`)

// benchAttempts drives one task of k attempts (parallel policy,
// --parallel 3, acceptance "true") and returns the wall time of Drive and,
// for k > 1, each attempt's time from its report to its verdict. Every
// attempt passes, attempt n writing n lines, so the ranking has diffs to
// compare.
func benchAttempts(b *testing.B, k int) (time.Duration, []time.Duration) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	l := newLayout(b)
	var mu sync.Mutex
	reported, judged := map[int]time.Time{}, map[int]time.Time{}
	var rt *fakeRuntime
	rt = newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		// Each attempt's agent works on its own goroutine, as containers
		// do: the fake watcher's scan goes on to the next command.
		go func() {
			time.Sleep(benchAgentTime)
			var body string
			for i := range c.Attempt {
				body += fmt.Sprintf("line %d of attempt %d\n", i, c.Attempt)
			}
			if err := os.WriteFile(filepath.Join(l.Attempt(c.RunID, c.ID, c.Attempt), "out.txt"), []byte(body), 0o644); err != nil {
				b.Error(err)
			}
			stem := c.ID
			if k > 1 {
				stem = protocol.Stem(c.ID, c.Attempt)
			}
			mu.Lock()
			reported[c.Attempt] = time.Now()
			mu.Unlock()
			if err := protocol.WriteReport(rt.layout.ReportFile(stem), completed(c)); err != nil {
				b.Error(err)
			}
		}()
		return nil
	})
	sink := events.Func(func(e events.Event) {
		if m := passedRE.FindStringSubmatch(e.Text); e.Type == events.Log && m != nil {
			n, _ := strconv.Atoi(m[1])
			mu.Lock()
			judged[n] = time.Now()
			mu.Unlock()
		}
	})
	ctx := b.Context()
	ws := l.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	repo, err := checkpoint.Open(ctx, ws, checkpoint.ShadowDir(filepath.Join(l.Root, "checkpoints"), ws), []string{l.Root})
	if err != nil {
		b.Fatal(err)
	}
	defer repo.Close()
	if err := repo.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	head, err := repo.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st := newTestState(b, plan.Task{ID: "best", Description: "the task", Acceptance: []string{"true"}, Attempts: k})
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}
	o := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel", Events: sink})
	b.StartTimer()
	start := time.Now()
	if err := o.Drive(ctx, st); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if got := st.Tasks[0].Status; got != taskgraph.Completed || st.Status != runrecord.RunCompleted {
		b.Fatalf("best %s, run %s; want completed", got, st.Status)
	}
	if n := rt.count("best"); n != k {
		b.Fatalf("best dispatched %d times, want %d", n, k)
	}
	if k == 1 {
		return elapsed, nil
	}
	mu.Lock()
	defer mu.Unlock()
	var judging []time.Duration
	for _, r := range st.Info["best"].Results {
		if r.Rank == 0 {
			b.Fatalf("attempt %d did not pass: %+v", r.Attempt, r)
		}
		rep, ok1 := reported[r.Attempt]
		ok, ok2 := judged[r.Attempt]
		if !ok1 || !ok2 {
			b.Fatalf("attempt %d: reported %v, its verdict logged %v: the log line %q changed?", r.Attempt, ok1, ok2, passedRE)
		}
		judging = append(judging, ok.Sub(rep))
	}
	return elapsed, judging
}
