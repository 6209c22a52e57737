package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/checkpoint"
	"github.com/codeagent/codeagent/planagent/internal/judge"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// severalAgent writes, in attempt n's copy, lines[n] lines to out.txt,
// and holds every report until hold attempts have their command: the
// attempts are in flight at once, or the test times out.
type severalAgent struct {
	t     *testing.T
	lines map[int]int
	hold  int
	fail  map[int]bool // report failure

	mu      sync.Mutex
	seen    map[int]bool
	arrived chan struct{}
	max     int // most commands seen before any was answered
}

func newSeveralAgent(t *testing.T, hold int, lines map[int]int) *severalAgent {
	return &severalAgent{t: t, lines: lines, hold: hold, fail: map[int]bool{}, seen: map[int]bool{}, arrived: make(chan struct{})}
}

func (a *severalAgent) answer(l func(c *protocol.Command) string) func(c *protocol.Command) *protocol.Report {
	return func(c *protocol.Command) *protocol.Report {
		a.mu.Lock()
		a.seen[c.Attempt] = true
		if len(a.seen) == a.hold {
			close(a.arrived)
		}
		a.max = max(a.max, len(a.seen))
		a.mu.Unlock()
		<-a.arrived
		var b strings.Builder
		for i := range a.lines[c.Attempt] {
			fmt.Fprintf(&b, "line %d of attempt %d\n", i, c.Attempt)
		}
		if err := os.WriteFile(filepath.Join(l(c), "out.txt"), []byte(b.String()), 0o644); err != nil {
			a.t.Error(err)
		}
		rep := completed(c)
		if a.fail[c.Attempt] {
			rep.Status, rep.Error = protocol.StatusFailed, "gave up"
		}
		return rep
	}
}

// The fake runtime answers each command on its own goroutine, so one
// held report does not hold the others.
func asyncAnswers(rt *fakeRuntime) {
	answer := rt.answer
	rt.answer = func(c *protocol.Command) *protocol.Report {
		go func() {
			if rep := answer(c); rep != nil {
				_ = protocol.WriteReport(rt.layout.ReportFile(protocol.Stem(c.ID, c.Attempt)), rep)
			}
		}()
		return nil
	}
}

func ranks(st *runrecord.State, id string) map[int]runrecord.AttemptResult {
	out := map[int]runrecord.AttemptResult{}
	for _, r := range st.Info[id].Results {
		out[r.Attempt] = r
	}
	return out
}

// parallel: the three attempts are in flight at once (each in its own
// copy, under its own files), all pass, and the smallest diff wins; the
// others are kept as refs with their ranks.
func TestSeveralParallelRunsAllAtOnceAndMergesTheSmallest(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	ag := newSeveralAgent(t, 3, map[int]int{1: 20, 2: 3, 3: 9})
	rt := newFakeRuntime(l, nil)
	rt.answer = ag.answer(func(c *protocol.Command) string { return l.Attempt(c.RunID, c.ID, c.Attempt) })
	asyncAnswers(rt)
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "risky", Description: "hard", Acceptance: []string{"test -s out.txt"}, Attempts: 3})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel"}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["risky"]; got != taskgraph.Completed {
		t.Fatalf("risky %s", got)
	}
	if ag.max != 3 {
		t.Errorf("at most %d attempts in flight at once, want 3", ag.max)
	}
	got, err := os.ReadFile(filepath.Join(l.Workspace(), "out.txt"))
	if err != nil || !strings.Contains(string(got), "of attempt 2") || strings.Count(string(got), "\n") != 3 {
		t.Errorf("workspace out.txt = %q, %v; want attempt 2's 3 lines", got, err)
	}
	rs := ranks(st, "risky")
	want := map[int]struct {
		status string
		rank   int
		ref    bool
	}{1: {"passed", 3, true}, 2: {"completed", 1, false}, 3: {"passed", 2, true}}
	for n, w := range want {
		r := rs[n]
		if r.Status != w.status || r.Rank != w.rank || (r.Ref != "") != w.ref {
			t.Errorf("attempt %d: status %s rank %d ref %q; want %s, %d, ref %v", n, r.Status, r.Rank, r.Ref, w.status, w.rank, w.ref)
		}
		if w.ref && r.Ref != checkpoint.AttemptRef(st.RunID, "risky", n) {
			t.Errorf("attempt %d ref %q", n, r.Ref)
		}
	}
	if n := rt.count("risky"); n != 3 {
		t.Errorf("%d commands for risky, want 3", n)
	}
	// The timeline has the three side by side, each closed with its outcome.
	spans := map[int]string{}
	for _, s := range st.Info["risky"].Spans {
		if s.End.IsZero() {
			t.Errorf("attempt %d's span left open", s.Attempt)
		}
		spans[s.Attempt] = s.Status
	}
	if spans[1] != "passed" || spans[2] != "completed" || spans[3] != "passed" {
		t.Errorf("spans %v", spans)
	}
	// status --json shows each attempt's rank and what it was ranked by.
	view := runview.Build(st, runview.Options{})
	for _, a := range view.Tasks[0].AttemptResults {
		wantDiff := map[int]int{1: 20, 2: 3, 3: 9}[a.Attempt]
		if a.DiffLines == nil || *a.DiffLines != wantDiff || a.Rank != want[a.Attempt].rank {
			t.Errorf("status of attempt %d: rank %d, diff_lines %v; want %d, %d", a.Attempt, a.Rank, a.DiffLines, want[a.Attempt].rank, wantDiff)
		}
	}
}

// --parallel 2 holds a 3-attempt parallel task to two attempts at once.
func TestSeveralParallelRespectsTheLimit(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "next.TestSettleStartsAttemptsSideBySide (the limit) and TestSeveralParallelRunsAllAtOnceAndMergesTheSmallest")
	l := newLayout(t)
	var mu sync.Mutex
	inFlight, most := 0, 0
	rt := newFakeRuntime(l, nil)
	rt.answer = func(c *protocol.Command) *protocol.Report {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		if err := os.WriteFile(filepath.Join(l.Attempt(c.RunID, c.ID, c.Attempt), "out.txt"), []byte(strings.Repeat("x\n", c.Attempt)), 0o644); err != nil {
			t.Error(err)
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return completed(c)
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "risky", Description: "hard", Attempts: 3})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 2, Policy: "parallel"}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["risky"]; got != taskgraph.Completed || rt.count("risky") != 3 {
		t.Fatalf("risky %s after %d commands", got, rt.count("risky"))
	}
	if rs := ranks(st, "risky"); rs[1].Status != "completed" || rs[1].Rank != 1 {
		t.Errorf("attempt 1 (the smallest diff): %+v", rs[1])
	}
}

// escalate: attempt 1 fails its check, then 2 and 3 run together from
// the same base; 2 passes with a large diff, 3 with a small one: 3 merges.
func TestSeveralEscalateRunsOneThenTheRestTogether(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "TestDriveEscalatesATaskOfSeveralAttempts, next.TestSettleStartsAttemptsSideBySide and TestSeveralParallelRunsAllAtOnceAndMergesTheSmallest")
	l := newLayout(t)
	var mu sync.Mutex
	var order []int
	holdRest := newSeveralAgent(t, 2, map[int]int{2: 30, 3: 2})
	rt := newFakeRuntime(l, nil)
	rest := holdRest.answer(func(c *protocol.Command) string { return l.Attempt(c.RunID, c.ID, c.Attempt) })
	rt.answer = func(c *protocol.Command) *protocol.Report {
		mu.Lock()
		order = append(order, c.Attempt)
		mu.Unlock()
		if c.Attempt == 1 {
			if err := os.WriteFile(filepath.Join(l.Attempt(c.RunID, c.ID, 1), "out.txt"), []byte("wrong\n"), 0o644); err != nil {
				t.Error(err)
			}
			return completed(c)
		}
		return rest(c)
	}
	asyncAnswers(rt)
	rt.execDir = func(dir, command string) attempt.ExecResult {
		b, _ := os.ReadFile(filepath.Join(dir, "out.txt"))
		if strings.Contains(string(b), "wrong") {
			return attempt.ExecResult{ExitCode: 1, Output: "FAIL: wrong"}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "risky", Description: "hard", Acceptance: []string{"check"}, Attempts: 3})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["risky"]; got != taskgraph.Completed {
		t.Fatalf("risky %s", got)
	}
	if len(order) != 3 || order[0] != 1 || holdRest.max != 2 {
		t.Errorf("attempts in order %v, %d of the rest at once; want 1 first, then 2 and 3 together", order, holdRest.max)
	}
	rs := ranks(st, "risky")
	if rs[1].Status != "failed" || rs[1].Ref == "" || rs[3].Status != "completed" || rs[3].Rank != 1 || rs[2].Rank != 2 || rs[2].Ref == "" {
		t.Errorf("results %+v", st.Info["risky"].Results)
	}
	if !rs[2].Hinted || rs[3].Hinted {
		t.Errorf("hinted: 2 %v, 3 %v; want 2 told the first failure, 3 not", rs[2].Hinted, rs[3].Hinted)
	}
}

// sizedAgent writes lines[n] lines to out.txt in attempt n's copy.
func sizedAgent(t *testing.T, l interface {
	Attempt(string, string, int) string
}, lines map[int]int) func(c *protocol.Command) *protocol.Report {
	return func(c *protocol.Command) *protocol.Report {
		var b strings.Builder
		for i := range lines[c.Attempt] {
			fmt.Fprintf(&b, "line %d of attempt %d\n", i, c.Attempt)
		}
		if err := os.WriteFile(filepath.Join(l.Attempt(c.RunID, c.ID, c.Attempt), "out.txt"), []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
		return completed(c)
	}
}

// A judge command that prints a higher number for the larger diff makes
// it win over the smaller one.
func TestSeveralJudgeChangesTheWinner(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, sizedAgent(t, l, map[int]int{1: 2, 2: 8}))
	rt.execDir = func(dir, command string) attempt.ExecResult {
		b, _ := os.ReadFile(filepath.Join(dir, "out.txt"))
		if command == "bench" {
			return attempt.ExecResult{Output: fmt.Sprintf("ops/s %d\n", strings.Count(string(b), "\n")*100)}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "fast", Description: "speed", Acceptance: []string{"check"}, Attempts: 2})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 2, Policy: "parallel", Judge: "bench"}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	rs := ranks(st, "fast")
	if rs[2].Status != "completed" || rs[2].Rank != 1 || rs[1].Rank != 2 {
		t.Errorf("results %+v; want attempt 2 (the judge's 800) over 1 (200)", st.Info["fast"].Results)
	}
	if c := rs[2].Candidate; c == nil || !c.Judged || c.Score == nil || *c.Score != 800 {
		t.Errorf("attempt 2's candidate %+v", c)
	}
}

// The gate (the acceptance commands on the merged result) rejects the
// best candidate: the next-ranked is merged, the rejected one kept.
func TestSeveralGateRejectionFallsBackToTheNextRanked(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "next.TestAttemptEvents (the gate's rejection) and TestSeveralParallelRunsAllAtOnceAndMergesTheSmallest")
	l := newLayout(t)
	rt := newFakeRuntime(l, sizedAgent(t, l, map[int]int{1: 2, 2: 8}))
	var mu sync.Mutex
	runs := map[string]int{}
	rt.execDir = func(dir, command string) attempt.ExecResult {
		mu.Lock()
		defer mu.Unlock()
		b, _ := os.ReadFile(filepath.Join(dir, "out.txt"))
		small := strings.Count(string(b), "\n") == 2
		// An attempt's commands run twice in its ".accept" copy: its
		// check, then (the winner) the gate on the merged tree. The small
		// one passes its check and fails the gate, as a test that only the
		// merged tree shows would.
		runs[dir]++
		if small && runs[dir] == 2 {
			runs["gate-rejected"]++
			return attempt.ExecResult{ExitCode: 1, Output: "FAIL on the merged tree"}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "gated", Description: "x", Acceptance: []string{"check"}, Attempts: 2})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 2, Policy: "parallel"}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["gated"]; got != taskgraph.Completed {
		t.Fatalf("gated %s", got)
	}
	rs := ranks(st, "gated")
	if runs["gate-rejected"] != 1 || rs[1].Status != "failed" || !strings.Contains(rs[1].Error, "FAIL on the merged tree") || rs[1].Candidate == nil ||
		rs[1].Ref == "" || rs[2].Status != "completed" || rs[2].Rank != 1 || rs[1].Rank != 0 {
		t.Errorf("gate runs %v, results %+v; want 1 rejected by the gate (kept), 2 merged", runs, st.Info["gated"].Results)
	}
	got, _ := os.ReadFile(filepath.Join(l.Workspace(), "out.txt"))
	if strings.Count(string(got), "\n") != 8 {
		t.Errorf("workspace out.txt has %d lines, want attempt 2's 8", strings.Count(string(got), "\n"))
	}
}

// first_pass_wins: the first attempt to pass wins at once; the others,
// still running, are abandoned and said to be stopped.
func TestSeveralFirstPassWinsStopsTheOthers(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	sized := sizedAgent(t, l, map[int]int{1: 5})
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.Attempt == 1 {
			return sized(c)
		}
		return nil // attempts 2 and 3 never report
	})
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "quick", Description: "x", Acceptance: []string{"true"}, Attempts: 3})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel", FirstPassWins: true}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["quick"]; got != taskgraph.Completed {
		t.Fatalf("quick %s", got)
	}
	rs := ranks(st, "quick")
	if rs[1].Status != "completed" || rs[2].Status != "stopped" || rs[3].Status != "stopped" {
		t.Errorf("results %+v", st.Info["quick"].Results)
	}
	rt.mu.Lock()
	abandoned := strings.Join(rt.abandoned, ",")
	rt.mu.Unlock()
	if abandoned != "quick.2,quick.3" {
		t.Errorf("abandoned %q, want quick.2,quick.3", abandoned)
	}
}

// The run's budget is reached while two attempts of a task still run:
// they stop together, the task goes back to pending (the stopped ones not
// counted against it) and the run pauses; the resume starts a whole
// series afresh and completes it.
func TestSeveralBudgetStopsTheAttemptsTogether(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "next.TestSettleStartsAttemptsSideBySide (the budget), TestSeveralFirstPassWinsStopsTheOthers (running attempts stopped together) and TestSeveralResumeKeepsTheHeldCandidate")
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.Attempt != 1 {
			return nil // still running when the budget is reached
		}
		rep := completed(c)
		rep.Status, rep.Error, rep.Tokens = protocol.StatusFailed, "gave up", protocol.Tokens{Prompt: 5000}
		return rep
	})
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "costly", Description: "x", Attempts: 3})
	o := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel", Budget: Budget{Tokens: 1000}})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunPaused || status(st)["costly"] != taskgraph.Pending {
		t.Fatalf("run %s, costly %s; want paused with costly pending", st.Status, status(st)["costly"])
	}
	rs := ranks(st, "costly")
	if rs[1].Status != "failed" || rs[2].Status != "stopped" || rs[3].Status != "stopped" {
		t.Errorf("results %+v", st.Info["costly"].Results)
	}
	rt.mu.Lock()
	abandoned := strings.Join(rt.abandoned, ",")
	rt.mu.Unlock()
	if abandoned != "costly.2,costly.3" {
		t.Errorf("abandoned %q, want costly.2,costly.3", abandoned)
	}
	if tk := st.Tasks[0]; tk.Attempts != 3 || tk.Granted != 2 {
		t.Errorf("attempts %d granted %d; want 3 started, the 2 stopped not counted", tk.Attempts, tk.Granted)
	}

	// Resume with room in the budget: a new series of three.
	loaded, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	rt2 := newFakeRuntime(l, sizedAgent(t, l, map[int]int{4: 3, 5: 1, 6: 2}))
	o2 := New(Options{Layout: l, Runtime: rt2, Repo: repo, Parallel: 3, Policy: "parallel", Budget: Budget{Tokens: 1_000_000}})
	if err := o2.Drive(t.Context(), loaded); err != nil {
		t.Fatal(err)
	}
	if loaded.Status != runrecord.RunCompleted {
		t.Fatalf("resumed run %s", loaded.Status)
	}
	rs = ranks(loaded, "costly")
	if rs[5].Status != "completed" || rs[5].Rank != 1 || rs[4].Rank != 3 || rs[6].Rank != 2 || rt2.count("costly") != 3 {
		t.Errorf("after resume: %d commands, results %+v", rt2.count("costly"), loaded.Info["costly"].Results)
	}
}

// The run is cut short while attempt 1 is held (passed, waiting for the
// others) and attempts 2 and 3 run; the state is loaded again from disk
// and resumed: attempt 1 is neither run nor checked again, 2 and 3 are
// waited for under their own files, one winner is chosen and merged as
// the task's one commit. It found that the resume looked at the claim
// before the command, so a claim made between the two looks sent the
// command again (attempt 2 run twice: 3 of 40 runs alone at load 16);
// run.onDisk looks in the order a command moves.
func TestSeveralResumeKeepsTheHeldCandidate(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, nil)
	sized := sizedAgent(t, l, map[int]int{1: 10})
	rt.answer = func(c *protocol.Command) *protocol.Report {
		if c.Attempt == 1 {
			return sized(c)
		}
		return nil
	}
	var checks sync.Map
	rt.execDir = func(dir, command string) attempt.ExecResult {
		n, _ := checks.LoadOrStore(dir, new(int))
		*n.(*int)++
		return attempt.ExecResult{Output: "ok"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "long", Description: "x", Acceptance: []string{"check"}, Attempts: 3})
	start := st.Checkpoints.Head
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sink := events.Func(func(e events.Event) {
		if strings.Contains(e.Text, "attempt 1 passed") {
			cancel()
		}
	})
	err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel", Events: sink}).Drive(ctx, st)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first drive: %v, want cancelled", err)
	}
	loaded, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := ranks(loaded, "long")[1]; r.Status != "held" || r.Candidate == nil {
		t.Fatalf("attempt 1 on disk: %+v, want held with its candidate", r)
	}
	// The dead watcher's claims are retaken: their commands are back.
	for n := 2; n <= 3; n++ {
		stem := protocol.Stem("long", n)
		if err := os.Rename(l.ClaimFile(stem), l.CommandFile(stem)); err != nil {
			t.Fatal(err)
		}
	}
	rt2 := newFakeRuntime(l, nil)
	sized2 := sizedAgent(t, l, map[int]int{2: 2})
	rt2.answer = func(c *protocol.Command) *protocol.Report {
		if c.Attempt == 3 {
			rep := completed(c)
			rep.Status, rep.Error = protocol.StatusFailed, "gave up"
			return rep
		}
		return sized2(c)
	}
	rt2.execDir = rt.execDir
	if err := New(Options{Layout: l, Runtime: rt2, Repo: repo, Parallel: 3, Policy: "parallel"}).Drive(t.Context(), loaded); err != nil {
		t.Fatal(err)
	}
	if loaded.Status != runrecord.RunCompleted {
		t.Fatalf("resumed run %s", loaded.Status)
	}
	if rt.count("long") != 3 || rt2.count("long") != 2 {
		t.Errorf("commands: %d before, %d after the resume; want 3 and then 2 (attempt 1 not again)", rt.count("long"), rt2.count("long"))
	}
	rs := ranks(loaded, "long")
	if rs[2].Status != "completed" || rs[2].Rank != 1 || rs[1].Status != "passed" || rs[1].Rank != 2 || rs[1].Ref == "" || rs[3].Status != "failed" {
		t.Errorf("results %+v", loaded.Info["long"].Results)
	}
	checks.Range(func(k, v any) bool {
		if strings.Contains(k.(string), "long.1") && *v.(*int) != 1 {
			t.Errorf("attempt 1 checked %d times in %s, want once", *v.(*int), k)
		}
		return true
	})
	out, err := exec.Command("git", "--git-dir", repo.GitDir(), "rev-list", "--count", start+".."+loaded.Checkpoints.Head).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("commits for the task: %s (%v), want 1", out, err)
	}
}

// judge: llm: two attempts tie on every rule (same acceptance, same diff
// size, same tokens); the model, asked once with both diffs, picks the
// second, which is merged with the model's reasoning on its record.
func TestSeveralLLMJudgeBreaksATie(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, sizedAgent(t, l, map[int]int{1: 4, 2: 4}))
	srv := llmtest.New(t)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if len(req.Messages) < 2 || !strings.HasPrefix(req.Messages[0].Content, judge.Marker) {
			return llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"not a judge request"}}`}
		}
		if u := req.Messages[1].Content; !strings.Contains(u, "=== attempt 1 ===") || !strings.Contains(u, "=== attempt 2 ===") {
			return llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"both tied attempts must be shown"}}`}
		}
		return llmtest.Calls(llmtest.Call("pick", `{"attempt": 2, "reason": "Two names its lines better."}`))
	})
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model"})
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "tie", Description: "x", Acceptance: []string{"true"}, Attempts: 2})
	o := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 2, Policy: "parallel", Judge: "llm", Reviewer: &judge.LLM{Client: client}})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Fatalf("the server rejected: %v", r)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d judge requests, want 1", n)
	}
	rs := ranks(st, "tie")
	if rs[2].Status != "completed" || rs[2].JudgeReason != "Two names its lines better." || rs[1].Status != "passed" || rs[1].Ref == "" {
		t.Errorf("results %+v", st.Info["tie"].Results)
	}
	if s := st.Info["tie"].Series; s == nil || !s.Reviewed || s.Pick != 2 {
		t.Errorf("series %+v", s)
	}
}

// No attempt of the series passes: the task fails as any task does, and
// its retry (--max-retries) runs one attempt, told why the task failed.
func TestSeveralSeriesFailsThenRetriesOneAttempt(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "next.TestSeriesProperties and TestDriveFailureSkipsDownstreamAndRetries")
	l := newLayout(t)
	var mu sync.Mutex
	hints := map[int][]string{}
	sized := sizedAgent(t, l, map[int]int{1: 1, 2: 2, 3: 3})
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		mu.Lock()
		hints[c.Attempt] = c.Hints
		mu.Unlock()
		return sized(c)
	})
	rt.execDir = func(dir, _ string) attempt.ExecResult {
		b, _ := os.ReadFile(filepath.Join(dir, "out.txt"))
		if strings.Count(string(b), "\n") < 3 {
			return attempt.ExecResult{ExitCode: 1, Output: "FAIL: too short"}
		}
		return attempt.ExecResult{Output: "ok"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "hard", Description: "x", Acceptance: []string{"check"}, Attempts: 2})
	if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 2, Policy: "parallel", MaxRetries: 2}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st)["hard"]; got != taskgraph.Completed || rt.count("hard") != 3 {
		t.Fatalf("hard %s after %d commands; want completed by attempt 3", got, rt.count("hard"))
	}
	rs := ranks(st, "hard")
	if rs[1].Status != "failed" || rs[2].Status != "failed" || rs[3].Status != "completed" || rs[3].Rank != 1 {
		t.Errorf("results %+v", st.Info["hard"].Results)
	}
	if s := st.Info["hard"].Series; s == nil || s.From != 3 || s.Size != 1 {
		t.Errorf("the retry's series %+v, want one attempt from 3", s)
	}
	if !strings.Contains(strings.Join(hints[3], "\n"), "too short") || !rs[3].Hinted {
		t.Errorf("attempt 3 hints %v: want the failure", hints[3])
	}
	if len(st.Decisions) == 0 || st.Decisions[len(st.Decisions)-1].Action != "retry" {
		t.Errorf("decisions %+v, want a retry", st.Decisions)
	}
}

// The run is cut short while an attempt's check runs: resume checks it
// again (its copy was kept) without running its agent again.
func TestSeveralResumeChecksACheckCutShort(t *testing.T) {
	t.Parallel()
	coveredInShort(t, "TestSeveralResumeKeepsTheHeldCandidate")
	l := newLayout(t)
	rt := newFakeRuntime(l, sizedAgent(t, l, map[int]int{1: 4, 2: 2}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	rt.execDir = func(dir, _ string) attempt.ExecResult {
		once.Do(cancel) // the first check is cut short with the run
		return attempt.ExecResult{ExitCode: 1, Output: "cut short"}
	}
	repo, st := newCheckpointedState(t, l, plan.Task{ID: "cut", Description: "x", Acceptance: []string{"check"}, Attempts: 2})
	err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 2, Policy: "parallel"}).Drive(ctx, st)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first drive: %v, want cancelled", err)
	}
	loaded, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	checking := 0
	for _, r := range loaded.Info["cut"].Results {
		if r.Status == "checking" {
			checking++
			if _, err := os.Stat(l.Attempt(st.RunID, "cut", r.Attempt)); err != nil {
				t.Errorf("attempt %d's copy is gone before its check is on the record: %v", r.Attempt, err)
			}
		}
	}
	if checking == 0 {
		t.Fatalf("no attempt left checking: %+v", loaded.Info["cut"].Results)
	}
	rt2 := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		t.Errorf("attempt %d run again", c.Attempt)
		return nil
	})
	rt2.execDir = func(string, string) attempt.ExecResult { return attempt.ExecResult{Output: "ok"} }
	if err := New(Options{Layout: l, Runtime: rt2, Repo: repo, Parallel: 2, Policy: "parallel"}).Drive(t.Context(), loaded); err != nil {
		t.Fatal(err)
	}
	if status(loaded)["cut"] != taskgraph.Completed || rt.count("cut") != 2 || rt2.count("cut") != 0 {
		t.Errorf("cut %s after %d and %d commands; results %+v", status(loaded)["cut"], rt.count("cut"), rt2.count("cut"), loaded.Info["cut"].Results)
	}
}

// first_pass_wins: one attempt is still being checked when attempt 1
// wins and is merged (or, the merge's gate rejecting it, the task fails),
// and the third still runs. The record says so when the run ends: the
// one checked has its own span, ended as the stopped ones' (interrupted),
// and is stopped, not checking for ever; the winner's span is its own.
// Its check, coming back after the task ended, changes nothing.
func TestSeveralFirstPassWinsStopsTheOneBeingChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		checked, running int  // the attempt being checked, the one running
		gateFails        bool // the merge's test gate rejects attempt 1
		task             taskgraph.Status
		first, why       string
	}{
		{name: "its span before the last", checked: 2, running: 3, task: taskgraph.Completed, first: "completed",
			why: "attempt 1 was merged before its check ended"},
		{name: "its span the last", checked: 3, running: 2, task: taskgraph.Completed, first: "completed",
			why: "attempt 1 was merged before its check ended"},
		{name: "the task failed", checked: 2, running: 3, gateFails: true, task: taskgraph.Failed, first: "failed",
			why: "its task failed before its check ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLayout(t)
			sized := sizedAgent(t, l, map[int]int{1: 5, tc.checked: 3})
			rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
				if c.Attempt == tc.running {
					return nil // still running when attempt 1 passes
				}
				return sized(c)
			})
			repo, st := newCheckpointedState(t, l, plan.Task{ID: "quick", Description: "x", Acceptance: []string{"check"}, Attempts: 3})
			checking, ended := make(chan struct{}), make(chan struct{})
			var once sync.Once
			ones := 0 // attempt 1's check, then its merge's gate, in its acceptance copy
			rt.execDir = func(dir, command string) attempt.ExecResult {
				switch dir {
				case l.Attempt(st.RunID, "quick", 1) + volume.AcceptSuffix:
					if ones++; ones > 1 && tc.gateFails {
						return attempt.ExecResult{ExitCode: 1, Output: "FAIL on the merged tree"}
					}
					<-checking
				case l.Attempt(st.RunID, "quick", tc.checked) + volume.AcceptSuffix:
					once.Do(func() { close(checking) })
					select { // the check outlasts its task
					case <-ended:
					case <-time.After(10 * time.Second):
						t.Error("the task did not end while its attempt was checked")
					}
				}
				return attempt.ExecResult{Output: "ok"}
			}
			sink := events.Func(func(e events.Event) {
				if e.Type == events.TaskEnd && e.TaskID == "quick" {
					close(ended)
				}
			})
			if err := New(Options{Layout: l, Runtime: rt, Repo: repo, Parallel: 3, Policy: "parallel", FirstPassWins: true, Events: sink}).Drive(t.Context(), st); err != nil {
				t.Fatal(err)
			}
			if got := status(st)["quick"]; got != tc.task {
				t.Fatalf("quick %s, want %s", got, tc.task)
			}
			rs := ranks(st, "quick")
			if rs[1].Status != tc.first || rs[tc.running].Status != "stopped" ||
				rs[tc.checked].Status != "stopped" || rs[tc.checked].Error != tc.why {
				t.Errorf("results %+v; want 1 %s, %d and %d stopped, %d for %q", st.Info["quick"].Results, tc.first, tc.running, tc.checked, tc.checked, tc.why)
			}
			spans := map[int]runrecord.Span{}
			for _, s := range st.Info["quick"].Spans {
				if _, twice := spans[s.Attempt]; twice {
					t.Errorf("attempt %d has two spans: %+v", s.Attempt, st.Info["quick"].Spans)
				}
				spans[s.Attempt] = s
			}
			for n, want := range map[int]string{1: tc.first, tc.checked: "interrupted", tc.running: "interrupted"} {
				if s := spans[n]; s.Status != want || s.End.IsZero() {
					t.Errorf("attempt %d's span %+v, want ended %s; spans %+v", n, s, want, st.Info["quick"].Spans)
				}
			}
		})
	}
}
