package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

func llmUsage() llm.Usage { return llm.Usage{Prompt: 100, Completion: 20} }

func status(st *runrecord.State) map[string]taskgraph.Status {
	m := map[string]taskgraph.Status{}
	for _, t := range st.Tasks {
		m[t.ID] = t.Status
	}
	return m
}

func TestDriveChainCompletes(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, completed)
	st := newTestState(t, chain(3)...)
	o := New(Options{Layout: l, Runtime: rt})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("status %s", st.Status)
	}
	for id, s := range status(st) {
		if s != taskgraph.Completed || rt.count(id) != 1 {
			t.Errorf("%s: %s, dispatched %d times", id, s, rt.count(id))
		}
	}
	if got := strings.Join(rt.commands, ","); got != "t000,t001,t002" {
		t.Errorf("dispatch order %s", got)
	}
	// Persisted, with each task's one attempt on the timeline.
	loaded, err := runrecord.LoadState(l, st.RunID, false)
	if err != nil || loaded.Status != runrecord.RunCompleted {
		t.Fatalf("load: %v %v", loaded, err)
	}
	for id, in := range loaded.Info {
		if len(in.Spans) != 1 || in.Spans[0].Attempt != 1 || in.Spans[0].Status != "completed" || in.Spans[0].End.Before(in.Spans[0].Start) {
			t.Errorf("%s: spans %+v", id, in.Spans)
		}
	}
	// The dependency's result reached the next command.
	b, err := os.ReadFile(l.Run(st.RunID) + "/tasks/t001/task-context.md")
	if err != nil || !strings.Contains(string(b), "did t000") {
		t.Errorf("archived task context of t001: %v\n%s", err, b)
	}
}

// A report left in reports/ by an earlier run on the same volumes is filed
// with that run when this run sends the task, not lost and not mistaken for
// this run's attempt.
func TestDriveArchivesAnEarlierRunsReportWithThatRun(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	old := &protocol.Report{ID: "t000", RunID: "run-old", Attempt: 2, Status: protocol.StatusCompleted, Summary: "old work"}
	if err := os.MkdirAll(l.Run("run-old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := protocol.WriteReport(l.ReportFile("t000"), old); err != nil {
		t.Fatal(err)
	}
	rt := newFakeRuntime(l, completed)
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(l.Run("run-old") + "/reports/t000.attempt-2.md")
	if err != nil {
		t.Fatalf("earlier run's report not archived with it: %v", err)
	}
	if got, err := protocol.ParseReport("", data); err != nil || got.Summary != "old work" {
		t.Fatalf("earlier run's report not archived with it: %v %+v", err, got)
	}
	if st.Status != runrecord.RunCompleted {
		t.Errorf("status %s", st.Status)
	}
}

func TestDriveFailureSkipsDownstreamAndRetries(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.ID == "bad" {
			r := completed(c)
			r.Status, r.Error = protocol.StatusFailed, "compile error"
			return r
		}
		return completed(c)
	})
	st := newTestState(t,
		plan.Task{ID: "bad", Description: "fails"},
		plan.Task{ID: "child", Description: "after bad", Dependencies: []string{"bad"}},
		plan.Task{ID: "grandchild", Description: "after child", Dependencies: []string{"child"}},
		plan.Task{ID: "other", Description: "independent"},
	)
	o := New(Options{Layout: l, Runtime: rt, MaxRetries: 1})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	got := status(st)
	want := map[string]taskgraph.Status{"bad": taskgraph.Failed, "child": taskgraph.Skipped, "grandchild": taskgraph.Skipped, "other": taskgraph.Completed}
	for id, s := range want {
		if got[id] != s {
			t.Errorf("%s = %s, want %s", id, got[id], s)
		}
	}
	if st.Status != runrecord.RunFailed || rt.count("bad") != 2 || rt.count("child") != 0 {
		t.Errorf("run %s, bad dispatched %d, child %d", st.Status, rt.count("bad"), rt.count("child"))
	}
	if len(st.Decisions) != 2 || st.Decisions[0].Action != "retry" || st.Decisions[1].Action != "continue" {
		t.Errorf("decisions %+v", st.Decisions)
	}
}

func TestDriveAcceptanceDecides(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, completed)
	st := newTestState(t,
		plan.Task{ID: "ok", Description: "passes", Acceptance: []string{"true"}},
		plan.Task{ID: "liar", Description: "says done but is not", Acceptance: []string{"test -f missing.txt"}},
	)
	o := New(Options{Layout: l, Runtime: rt})
	if err := o.Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	got := status(st)
	if got["ok"] != taskgraph.Completed || got["liar"] != taskgraph.Failed {
		t.Fatalf("statuses %v", got)
	}
	for _, tk := range st.Tasks {
		if tk.ID == "liar" && !strings.Contains(tk.Error, "test -f missing.txt") {
			t.Errorf("error %q does not name the acceptance command", tk.Error)
		}
	}
}

func TestDriveParallel(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	release := make(chan struct{})
	var rt *fakeRuntime
	rt = newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		// Hold the reports back until both tasks have been dispatched.
		if rt.count("a")+rt.count("b") == 2 {
			close(release)
		}
		go func() {
			<-release
			_ = protocol.WriteReport(l.ReportFile(c.ID), completed(c))
		}()
		return nil
	})
	st := newTestState(t, plan.Task{ID: "a", Description: "a"}, plan.Task{ID: "b", Description: "b"})
	o := New(Options{Layout: l, Runtime: rt, Parallel: 2})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := o.Drive(ctx, st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("status %s", st.Status)
	}
}

func TestDriveResumeReadsReportThatArrivedWhileDown(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	st := newTestState(t, chain(2)...)
	// The state of a planagent killed after dispatching t000 ...
	killedAfterDispatch(t, l, st, "t000")
	// ... whose report arrived while it was down.
	_ = protocol.WriteReport(l.ReportFile("t000"), completed(&protocol.Command{ID: "t000", RunID: st.RunID, Attempt: 1}))

	rt := newFakeRuntime(l, completed)
	loaded, err := runrecord.LoadState(l, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := New(Options{Layout: l, Runtime: rt}).Drive(t.Context(), loaded); err != nil {
		t.Fatal(err)
	}
	if loaded.Status != runrecord.RunCompleted || rt.count("t000") != 0 || rt.count("t001") != 1 {
		t.Fatalf("status %s; t000 redispatched %d times; t001 %d", loaded.Status, rt.count("t000"), rt.count("t001"))
	}
}

func TestDriveResumeResendsLostCommand(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	st := newTestState(t, chain(1)...)
	g, _ := taskgraph.New(st.Tasks)
	_ = g.Start("t000")
	st.Tasks = g.Tasks()
	st.Info["t000"].Attempt = 1
	_ = st.Save(l, time.Now()) // killed before the command file was written
	rt := newFakeRuntime(l, completed)
	if err := New(Options{Layout: l, Runtime: rt}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted || rt.count("t000") != 1 {
		t.Fatalf("status %s, dispatched %d", st.Status, rt.count("t000"))
	}
}

func TestDriveRuntimeDeathRetriesOnFreshRuntime(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var rt *fakeRuntime
	rt = newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.Attempt == 1 {
			rt.exited <- attempt.Exit{Err: errBoom} // the container died mid-task
			return nil
		}
		return completed(c)
	})
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	starts := rt.starts
	rt.mu.Unlock()
	if st.Status != runrecord.RunCompleted || starts != 2 || rt.count("t000") != 2 {
		t.Fatalf("status %s, starts %d, dispatched %d", st.Status, starts, rt.count("t000"))
	}
}

// A watcher that stops beating (frozen, or a compose container that died
// without planagent owning it) is stopped and replaced, and its task is sent
// again on the fresh one.
func TestDriveSilentWatcherIsReplaced(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	clock := newTestClock()
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.Attempt == 1 {
			clock.tickAfter(t, time.Minute) // the watcher froze with the task
			return nil
		}
		return completed(c)
	})
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt, HeartbeatTimeout: 30 * time.Second, Now: clock.Now, Tick: clock.ticks}).Drive(clock.deadline(t), st); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	starts := rt.starts
	rt.mu.Unlock()
	if st.Status != runrecord.RunCompleted || starts != 2 || rt.count("t000") != 2 {
		t.Fatalf("status %s, starts %d, dispatched %d", st.Status, starts, rt.count("t000"))
	}
	if h := strings.Join(st.Info["t000"].History, "\n"); !strings.Contains(h, "no watcher heartbeat") {
		t.Errorf("history does not say why the task was sent again: %q", h)
	}
}

// A task whose agent has not beaten yet is not taken for dead: with
// per-attempt containers the previous attempt's container took its heartbeat
// away when it exited, and the new one may take more than a tick to start.
// The clock and the ticks are the test's: two ticks, 5 s after the launch,
// come while the agent has no heartbeat; the second is received only once
// the loop is done with the first.
func TestDriveNewAttemptGetsTheHeartbeatTimeoutToBeat(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	tick := make(chan time.Time)
	running, release := make(chan struct{}), make(chan struct{})
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		_ = os.Remove(filepath.Join(l.Watchers(), "fake.json"))
		close(running)
		<-release
		return completed(c)
	})
	go func() {
		defer close(release)
		select {
		case <-running:
		case <-t.Context().Done():
			return
		}
		mu.Lock()
		now = now.Add(5 * time.Second)
		mu.Unlock()
		for range 2 {
			select {
			case tick <- clock():
			case <-t.Context().Done():
				return
			}
		}
	}()
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt, HeartbeatTimeout: 10 * time.Second, Now: clock, Tick: tick}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	starts := rt.starts
	rt.mu.Unlock()
	if st.Status != runrecord.RunCompleted || starts != 1 || rt.count("t000") != 1 {
		t.Fatalf("status %s, runtime starts %d, dispatched %d: a task was taken for dead before its agent could beat", st.Status, starts, rt.count("t000"))
	}
}

func TestDriveInterrupted(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	ctx, cancel := context.WithCancel(t.Context())
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		cancel() // Ctrl-C while the task runs
		return nil
	})
	st := newTestState(t, chain(2)...)
	err := New(Options{Layout: l, Runtime: rt}).Drive(ctx, st)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("err %v", err)
	}
	loaded, lerr := runrecord.LoadState(l, st.RunID, true)
	if lerr != nil || loaded.Status != runrecord.RunInterrupted {
		t.Fatalf("persisted %v %v", loaded, lerr)
	}
}

func TestDriveTimeout(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	clock := newTestClock()
	rt := newFakeRuntime(l, func(*protocol.Command) *protocol.Report { // never reports
		clock.tickAfter(t, time.Minute+time.Second)
		return nil
	})
	st := newTestState(t, chain(1)...)
	o := New(Options{Layout: l, Runtime: rt, TaskTimeout: time.Minute, Now: clock.Now, Tick: clock.ticks})
	if err := o.Drive(clock.deadline(t), st); err != nil {
		t.Fatal(err)
	}
	if status(st)["t000"] != taskgraph.Failed {
		t.Fatalf("statuses %v", status(st))
	}
	if !strings.Contains(st.Tasks[0].Error, "no report within") {
		t.Errorf("error %q", st.Tasks[0].Error)
	}
	if strings.Join(rt.abandoned, ",") != "t000.1" {
		t.Errorf("abandoned %v, want the timed-out attempt t000.1 stopped", rt.abandoned)
	}
}

func TestDriveTaskThatKillsEveryAgentFails(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var rt *fakeRuntime
	rt = newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		if c.ID == "killer" {
			rt.exited <- attempt.Exit{Err: errBoom} // every attempt takes the agent down
			return nil
		}
		return completed(c)
	})
	st := newTestState(t, plan.Task{ID: "killer", Description: "fills the memory"}, plan.Task{ID: "fine", Description: "independent"})
	if err := New(Options{Layout: l, Runtime: rt, MaxRetries: 1}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	got := status(st)
	if got["killer"] != taskgraph.Failed || got["fine"] != taskgraph.Completed || st.Status != runrecord.RunFailed {
		t.Fatalf("statuses %v, run %s", got, st.Status)
	}
	// One first run, MaxRetries+next.SpareAttempts more after deaths, and no more.
	if n := rt.count("killer"); n != 1+1+next.SpareAttempts {
		t.Errorf("killer dispatched %d times, want %d", n, 1+1+next.SpareAttempts)
	}
	for _, tk := range st.Tasks {
		if tk.ID == "killer" && !strings.Contains(tk.Error, "died") {
			t.Errorf("error %q does not say the agent died", tk.Error)
		}
	}
}

// Acceptance runs beside the loop: a slow acceptance command does not hold
// up the other task's report (with a blocking loop this run never ends).
func TestDriveAcceptanceDoesNotBlockTheLoop(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, completed)
	otherDone := make(chan struct{})
	rt.exec = func(command string) attempt.ExecResult {
		if command == "wait-for-other" {
			select {
			case <-otherDone:
			case <-time.After(10 * time.Second):
				return attempt.ExecResult{ExitCode: 1, Output: "the other task was never handled"}
			}
		}
		return attempt.ExecResult{}
	}
	events := &recordSink{onEnd: func(id string) {
		if id == "other" {
			close(otherDone)
		}
	}}
	st := newTestState(t,
		plan.Task{ID: "slow", Description: "slow acceptance", Acceptance: []string{"wait-for-other"}},
		plan.Task{ID: "other", Description: "independent"},
	)
	if err := New(Options{Layout: l, Runtime: rt, Parallel: 2, Events: events}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if got := status(st); got["slow"] != taskgraph.Completed || got["other"] != taskgraph.Completed {
		t.Fatalf("statuses %v", got)
	}
}

// Ctrl-C reaches a decider that is still thinking: Drive returns at once
// with the run saved as interrupted.
func TestDriveInterruptStopsTheDecider(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		r := completed(c)
		r.Status, r.Error = protocol.StatusFailed, "broken"
		return r
	})
	asked := make(chan struct{})
	d := deciderFunc(func(ctx context.Context, f Failure) Verdict {
		close(asked)
		<-ctx.Done()
		return Verdict{Action: "continue", Invalid: ctx.Err().Error()}
	})
	st := newTestState(t, plan.Task{ID: "bad", Description: "fails"})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	errc := make(chan error, 1)
	go func() { errc <- New(Options{Layout: l, Runtime: rt, Decider: d}).Drive(ctx, st) }()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Drive = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Drive did not return after Ctrl-C while the decider was asked")
	}
	if loaded, err := runrecord.LoadState(l, st.RunID, false); err != nil || loaded.Status != runrecord.RunInterrupted {
		t.Fatalf("saved state: %v %v", loaded, err)
	}
}

type deciderFunc func(ctx context.Context, f Failure) Verdict

func (d deciderFunc) Decide(ctx context.Context, f Failure) Verdict { return d(ctx, f) }

// recordSink calls onEnd with the task id of every task_end event.
type recordSink struct{ onEnd func(id string) }

func (s *recordSink) Emit(e events.Event) {
	if e.Type == events.TaskEnd {
		s.onEnd(e.TaskID)
	}
}
