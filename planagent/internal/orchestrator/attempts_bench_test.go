package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// benchAgentTime is the simulated agent's time per attempt: the figures
// are then this plus the orchestration's share.
const benchAgentTime = 200 * time.Millisecond

// BenchmarkBestOfThree is the wall time of one task of three attempts
// under the parallel policy at --parallel 3 against the same task with one
// attempt, on a real checkpoint repository (a copy per attempt, the
// squash, the acceptance command in a fresh copy of each result, the
// ranking, the merge, the losers kept as refs), each attempt's agent
// taking benchAgentTime on its own goroutine. ratio is three over one
// (goal ≤ 1.2). judging-ms-per-attempt is what the acceptance command
// ("true", run by the shell in the attempt's acceptance copy) adds to a
// one-attempt task; judging-ms-three is what it adds to the three
// attempts together, whose acceptance runs overlap.
func BenchmarkBestOfThree(b *testing.B) {
	accept := []string{"true"}
	var one, oneBare, three, threeBare time.Duration
	n := 0
	for b.Loop() {
		one += benchAttempts(b, 1, accept)
		oneBare += benchAttempts(b, 1, nil)
		three += benchAttempts(b, 3, accept)
		threeBare += benchAttempts(b, 3, nil)
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(ms(one), "ms-one")
	b.ReportMetric(ms(three), "ms-three")
	b.ReportMetric(float64(three)/float64(one), "ratio")
	b.ReportMetric(ms(one-oneBare), "judging-ms-per-attempt")
	b.ReportMetric(ms(three-threeBare), "judging-ms-three")
}

// benchAttempts drives one task of k attempts (parallel policy,
// --parallel 3) with the given acceptance commands and returns the
// wall time of Drive. Every attempt passes, attempt n writing n lines, so
// the ranking has diffs to compare and attempt 1 wins.
func benchAttempts(b *testing.B, k int, acceptance []string) time.Duration {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	l := newLayout(b)
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
			if err := protocol.WriteReport(rt.layout.ReportFile(stem), completed(c)); err != nil {
				b.Error(err)
			}
		}()
		return nil
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
	st := newTestState(b, plan.Task{ID: "best", Description: "the task", Acceptance: acceptance, Attempts: k})
	st.Checkpoints = &runrecord.Checkpoints{Mode: repo.Mode(), GitDir: repo.GitDir(), Branch: repo.Branch(), Start: head, Head: head}
	o := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel"})
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
	if k > 1 {
		for _, r := range st.Info["best"].Results {
			if r.Rank == 0 {
				b.Fatalf("attempt %d did not pass: %+v", r.Attempt, r)
			}
		}
	}
	return elapsed
}
