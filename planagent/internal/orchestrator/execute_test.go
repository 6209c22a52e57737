package orchestrator

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/projectctx"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Each next.Action's function is tested alone here, on a run made without Drive:
// real files under a temporary volumes dir, a fake runtime, fake repos.

func newTestRun(t *testing.T, opts Options, tasks ...plan.Task) *run {
	t.Helper()
	opts.Layout = newLayout(t)
	if opts.Runtime == nil {
		opts.Runtime = newFakeRuntime(opts.Layout, completed)
	}
	o := New(opts)
	st := newTestState(t, tasks...)
	if err := st.Save(opts.Layout, time.Now()); err != nil {
		t.Fatal(err)
	}
	g, err := taskgraph.New(st.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	root, err := safefs.OpenRoot(opts.Layout.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	r := o.newRun(st, g, root, projectctx.New(root, opts.Layout, st.RunID, st.Goal, "test", "a test plan"))
	r.started = o.opts.Now()
	t.Cleanup(func() {
		close(r.stopped)
		_ = st.Close()
	})
	return r
}

func statusOf(t *testing.T, r *run, id string) taskgraph.Status {
	t.Helper()
	task, ok := r.g.Get(id)
	if !ok {
		t.Fatalf("no task %s", id)
	}
	return task.Status
}

// advanceFails is a checkpoint repository whose workspace cannot be moved.
type advanceFails struct{ Repo }

func (advanceFails) Advance(context.Context, string, string) error {
	return errors.New("a file changed since")
}
func (advanceFails) RemoveCopy(string) error  { return nil }
func (advanceFails) DiscardCopy(string) error { return nil }

func TestCompleteThatCannotReachTheWorkspaceComesBackAsAnEvent(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{Repo: advanceFails{}}, chain(1)...)
	r.st.Checkpoints = &runrecord.Checkpoints{Mode: "shadow", Start: "c1", Head: "c1"}
	if err := r.g.Start("t000"); err != nil {
		t.Fatal(err)
	}
	if err := r.complete(t.Context(), next.ActComplete{ID: "t000", Summary: "did it", Commit: "c2"}); err != nil {
		t.Fatal(err)
	}
	if len(r.outcomes) != 1 {
		t.Fatalf("outcomes %#v, want one failed merge", r.outcomes)
	}
	m, ok := r.outcomes[0].(next.EvMerged)
	if !ok || m.ID != "t000" || !strings.Contains(m.Failure, "update the workspace with the merged result: a file changed since") {
		t.Errorf("outcome %#v", r.outcomes[0])
	}
	if got := statusOf(t, r, "t000"); got != taskgraph.InProgress {
		t.Errorf("task is %s, want still in progress for the decision step", got)
	}
	if r.st.Checkpoints.Head != "c1" || r.info("t000").Merging != "" {
		t.Errorf("head %s, merging %q: want the integration state unmoved", r.st.Checkpoints.Head, r.info("t000").Merging)
	}
}

func TestRecordReportAddsUpTheAttempts(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	for n := 1; n <= 2; n++ {
		r.recordReport("t000", "t000", &protocol.Report{ID: "t000", Attempt: n, Summary: "try", Reason: protocol.ReasonModel,
			Tokens: protocol.Tokens{Prompt: 10, Completion: 1}, FilesChanged: []string{"a.go"}})
	}
	info := r.info("t000")
	if info.Attempt != 2 || info.Tokens.Prompt != 20 || r.spent.agents.Prompt != 20 || info.Reason != protocol.ReasonModel || len(info.FilesChanged) != 1 {
		t.Errorf("info %+v, run tokens %+v", info, r.spent.agents)
	}
}

func TestFailSkipsTheDependantsAndSaysWhy(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(2)...)
	if err := r.g.Start("t000"); err != nil {
		t.Fatal(err)
	}
	if err := r.fail(t.Context(), next.ActFail{ID: "t000", Reason: "tests failed"}); err != nil {
		t.Fatal(err)
	}
	if statusOf(t, r, "t000") != taskgraph.Failed || statusOf(t, r, "t001") != taskgraph.Skipped {
		t.Errorf("statuses %v", r.g.Tasks())
	}
	if len(r.issues) != 1 || !strings.Contains(r.issues[0], "tests failed") {
		t.Errorf("issues %v", r.issues)
	}
	loaded, err := runrecord.LoadState(r.o.opts.Layout, r.st.RunID, false)
	if err != nil || loaded.Tasks[0].Status != taskgraph.Failed {
		t.Fatalf("saved state: %v", err)
	}
}

func TestRequeueSendsTheTaskAgainWithANote(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	if err := r.g.Start("t000"); err != nil {
		t.Fatal(err)
	}
	r.info("t000").Attempt = 1
	r.info("t000").OpenSpan(1, r.o.opts.Now())
	if err := r.requeue(next.ActRequeue{ID: "t000", Note: "the coding agent died"}); err != nil {
		t.Fatal(err)
	}
	info := r.info("t000")
	if statusOf(t, r, "t000") != taskgraph.Pending || len(info.History) != 1 || !strings.Contains(info.History[0], "died") {
		t.Errorf("status %s, history %v", statusOf(t, r, "t000"), info.History)
	}
	if sp := info.Spans[0]; sp.End.IsZero() || sp.Status != "interrupted" {
		t.Errorf("span %+v, want closed as interrupted", sp)
	}
}

func TestRetryCarriesTheHints(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	_ = r.g.Start("t000")
	_ = r.g.Fail("t000", "broke")
	if err := r.retry(next.ActRetry{ID: "t000", Hints: []string{"read the docs"}}); err != nil {
		t.Fatal(err)
	}
	if statusOf(t, r, "t000") != taskgraph.Pending || strings.Join(r.info("t000").Hints, "") != "read the docs" {
		t.Errorf("status %s, hints %v", statusOf(t, r, "t000"), r.info("t000").Hints)
	}
}

// Reading the view changes nothing; the budget is announced once, by its
// next.Action, and the view then no longer asks for it.
func TestNoteBudgetAnnouncesOnce(t *testing.T) {
	t.Parallel()
	var logged []string
	sink := events.Func(func(e events.Event) {
		if e.Type == events.Log {
			logged = append(logged, e.Text)
		}
	})
	r := newTestRun(t, Options{Budget: Budget{Tokens: 100}, Events: sink}, chain(1)...)
	r.spent.agents = protocol.Tokens{Prompt: 150}
	for range 3 {
		if v := r.view(); v.Budget == "" || !v.BudgetNew {
			t.Fatalf("view %+v: want the budget reached and new", v)
		}
	}
	if len(logged) != 0 {
		t.Fatalf("reading the view emitted %v", logged)
	}
	r.noteBudget(next.ActNoteBudget{Reason: r.view().Budget})
	if v := r.view(); v.BudgetNew || v.Budget == "" {
		t.Errorf("view after the note %+v", v)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "token budget reached") {
		t.Errorf("logged %v", logged)
	}
}

func TestFinishSavesWhyTheRunStopped(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{Budget: Budget{Tokens: 100}}, chain(1)...)
	r.spent.agents = protocol.Tokens{Prompt: 150} // and the planner's 120 of the state
	if err := r.finish(t.Context(), next.ActFinish{Status: next.RunPaused, Paused: "token budget reached"}); err != nil {
		t.Fatal(err)
	}
	loaded, err := runrecord.LoadState(r.o.opts.Layout, r.st.RunID, false)
	if err != nil {
		t.Fatal(err)
	}
	if !r.done || loaded.Status != runrecord.RunPaused || loaded.Stop == nil || loaded.Stop.Reason != runrecord.StopBudgetTok || loaded.Stop.Used != 270 {
		t.Errorf("done %v, saved status %s, stop %+v", r.done, loaded.Status, loaded.Stop)
	}
}

func TestDecideRecordsAndTells(t *testing.T) {
	t.Parallel()
	var got []events.Event
	r := newTestRun(t, Options{Events: events.Func(func(e events.Event) { got = append(got, e) })}, chain(1)...)
	if err := r.decide(next.ActDecide{ID: "t000", Action: "retry", Reason: "flaky", Hints: []string{"again"}}); err != nil {
		t.Fatal(err)
	}
	if len(r.st.Decisions) != 1 || r.st.Decisions[0].Action != "retry" || len(got) != 1 || got[0].Type != events.Decision {
		t.Errorf("decisions %+v, events %+v", r.st.Decisions, got)
	}
}

// stopCounting counts the runtime's Stop calls.
type stopCounting struct {
	*fakeRuntime
	stops int
}

func (s *stopCounting) Stop(ctx context.Context) error {
	s.stops++
	return s.fakeRuntime.Stop(ctx)
}

func TestAbandonStopsTheAttemptAndComesBackAsATimeout(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(2)...)
	r.underway.launched("t000", r.newFlight("t000", 2))
	r.underway.launched("t001", r.newFlight("t001", 1))
	r.abandon(t.Context(), next.ActAbandon{ID: "t000"})
	rt := r.o.opts.Runtime.(*fakeRuntime)
	// The runtime is told which attempt: the task's others run on.
	if strings.Join(rt.abandoned, ",") != "t000.2" || !r.underway.isAbandoned("t000") {
		t.Errorf("runtime abandoned %v, run's abandoned %v: want t000's attempt 2 stopped and its copy kept from reuse", rt.abandoned, r.underway.abandoned)
	}
	if r.underway.flight("t000") != nil || !slices.Equal(r.underway.keys(), []string{"t001"}) {
		t.Errorf("in flight %v, want only t001", r.underway.keys())
	}
	if len(r.outcomes) != 1 || r.outcomes[0] != (next.EvTimedOut{ID: "t000"}) {
		t.Errorf("outcomes %#v, want t000's time-out", r.outcomes)
	}
}

func TestStopSilentWatcherStopsItAndReturnsItsTasks(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := &stopCounting{fakeRuntime: newFakeRuntime(l, completed)}
	r := newTestRun(t, Options{Runtime: rt}, chain(2)...)
	r.underway.launched("t000", r.newFlight("t000", 1))
	r.underway.launched("t001", r.newFlight("t001", 1))
	// t001 reported before the watcher fell silent: it is collected as usual.
	rep := &protocol.Report{ID: "t001", RunID: r.st.RunID, Attempt: 1, Status: protocol.StatusCompleted}
	if err := protocol.WriteReport(r.o.opts.Layout.ReportFile("t001"), rep); err != nil {
		t.Fatal(err)
	}
	r.stopSilentWatcher(t.Context(), next.ActStopSilentWatcher{Silent: 30 * time.Second})
	if rt.stops != 1 {
		t.Errorf("runtime stopped %d times, want 1", rt.stops)
	}
	if len(r.outcomes) != 1 {
		t.Fatalf("outcomes %#v, want the watcher's death", r.outcomes)
	}
	d, ok := r.outcomes[0].(next.EvAgentDied)
	if !ok || d.TaskID != "" || strings.Join(d.Reported, ",") != "t001" || !strings.Contains(d.Cause.Error(), "no watcher heartbeat in "+r.o.opts.Layout.Watchers()+" for 30s") {
		t.Errorf("outcome %#v, want the shared watcher's death with t001 reported", r.outcomes[0])
	}
}

func TestFreeClaimLetsTheNextAttemptBeTakenAfresh(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	l := r.o.opts.Layout
	for _, p := range []string{l.ClaimFile("t000"), l.OwnerFile("t000")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.freeClaim("t000")
	for _, p := range []string{l.ClaimFile("t000"), l.OwnerFile("t000")} {
		if exists(p) {
			t.Errorf("%s is still there", p)
		}
	}
}

// The agents can write commands/: a .claimed planted as a link to a host
// dir does not have the host's <id>.md removed.
func TestFreeClaimDoesNotFollowALink(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	l := r.o.opts.Layout
	outside := t.TempDir()
	for _, p := range []string{l.ClaimFile("t000"), l.OwnerFile("t000")} {
		if err := os.WriteFile(filepath.Join(outside, filepath.Base(p)), []byte("host"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(l.Claimed()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, l.Claimed()); err != nil {
		t.Fatal(err)
	}
	r.freeClaim("t000")
	if got := tree(t, outside); !slices.Equal(got, []string{"t000.md", "t000.owner.json"}) {
		t.Errorf("outside holds %v, want both host files", got)
	}
}

func TestDropStaleReportSaysSoOnce(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	r := newTestRun(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, chain(1)...)
	r.underway.launched("t000", r.newFlight("t000", 2))
	for range 3 {
		r.dropStaleReport(next.ActDropStaleReport{ID: "t000", RunID: r.st.RunID, Attempt: 1, Want: 2})
	}
	if n := strings.Count(logs.String(), "ignoring a stale report"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	if r.underway.flight("t000") == nil {
		t.Error("the task stopped being waited for")
	}
}

func TestRecordReportStopsTheWait(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	r.underway.launched("t000", r.newFlight("t000", 1))
	r.recordReport("t000", "t000", &protocol.Report{ID: "t000", Attempt: 1})
	if keys := r.underway.keys(); len(keys) != 0 {
		t.Errorf("in flight %v after the report", keys)
	}
}

// squashNothing is a checkpoint repository whose attempts change nothing.
type squashNothing struct{ Repo }

func (squashNothing) Squash(_ context.Context, _, base, _, _ string) (string, []string, error) {
	return base, nil, nil
}

// squashSignal is a checkpoint repository whose squashes say when they
// run.
type squashSignal struct {
	Repo
	ran chan string
}

func (s squashSignal) Squash(_ context.Context, _, base, subject, _ string) (string, []string, error) {
	s.ran <- subject
	return base, nil, nil
}

// A queued attempt is committed while it waits: the squash needs nothing
// merged before it, so it runs beside the merge ahead (with parallel
// tasks, off the queue's one line).
func TestQueuedAttemptsSquashWhileTheyWait(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 2)
	r := newTestRun(t, Options{Repo: squashSignal{ran: ran}}, fanOut(2)...)
	r.st.Checkpoints = &runrecord.Checkpoints{Mode: "shadow", Start: "c1", Head: "c1"}
	r.enqueueMerge(t.Context(), "p0")
	r.enqueueMerge(t.Context(), "p1")
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case s := <-ran:
			got[strings.SplitN(s, ":", 2)[0]] = true
		case <-t.Context().Done():
			t.Fatalf("squashed before any merge started: %v; want p0 and p1", got)
		}
	}
	r.squashing.Wait()
}

func TestStartMergeTakesTheQueueHeadOneAtATime(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{Repo: squashNothing{}}, fanOut(2)...)
	r.st.Checkpoints = &runrecord.Checkpoints{Mode: "shadow", Start: "c1", Head: "c1"}
	r.enqueueMerge(t.Context(), "p0")
	r.enqueueMerge(t.Context(), "p1")
	if err := r.startMerge(t.Context(), next.ActStartMerge{ID: "p1"}); err == nil {
		t.Fatal("the queue's second attempt merged first")
	}
	if err := r.startMerge(t.Context(), next.ActStartMerge{ID: "p0"}); err != nil {
		t.Fatal(err)
	}
	if err := r.startMerge(t.Context(), next.ActStartMerge{ID: "p1"}); err == nil {
		t.Fatal("a second merge started while one runs")
	}
	if v := r.view(); !v.Merging || v.MergeNext != "p1" {
		t.Errorf("view: merging %v, next %q; want merging, p1 next", v.Merging, v.MergeNext)
	}
	select {
	case ev := <-r.results:
		if m, ok := ev.(next.EvMerged); !ok || m.ID != "p0" || m.Candidate != "c1" || m.Failure != "" {
			t.Errorf("merge result %#v", ev)
		}
	case <-t.Context().Done():
		t.Fatal("no merge result")
	}
}

// advanceRecorder is a checkpoint repository that records its moves.
type advanceRecorder struct {
	Repo
	moves *[][2]string
}

func (a advanceRecorder) Advance(_ context.Context, old, new string) error {
	*a.moves = append(*a.moves, [2]string{old, new})
	return nil
}

func TestFinishMergeMovesAgainAndRecordsTheCheckpoint(t *testing.T) {
	t.Parallel()
	var moves [][2]string
	r := newTestRun(t, Options{Repo: advanceRecorder{moves: &moves}}, chain(1)...)
	r.st.Checkpoints = &runrecord.Checkpoints{Mode: "shadow", Start: "c1", Head: "c1"}
	r.info("t000").Merging = "c2"
	if err := r.do(t.Context(), next.EvInterruptedMerge{}, next.ActFinishMerge{ID: "t000", Target: "c2"}); err != nil {
		t.Fatal(err)
	}
	if len(moves) != 1 || moves[0] != [2]string{"c1", "c2"} {
		t.Errorf("moves %v, want c1 to c2 once", moves)
	}
	if info := r.info("t000"); r.st.Checkpoints.Head != "c2" || info.Commit != "c2" || info.Merging != "" {
		t.Errorf("head %s, commit %s, merging %q", r.st.Checkpoints.Head, info.Commit, info.Merging)
	}
}

func TestForgetMergeLeavesTheTaskToBeMergedAgain(t *testing.T) {
	t.Parallel()
	var moves [][2]string
	r := newTestRun(t, Options{Repo: advanceRecorder{moves: &moves}}, chain(1)...)
	r.st.Checkpoints = &runrecord.Checkpoints{Mode: "shadow", Start: "c1", Head: "c1"}
	r.info("t000").Merging = "c2"
	if err := r.do(t.Context(), next.EvInterruptedMerge{}, next.ActForgetMerge{ID: "t000", Head: "theirs"}); err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 || r.info("t000").Merging != "" || r.st.Checkpoints.Head != "c1" {
		t.Errorf("moves %v, merging %q, head %s: want nothing moved and the merge dropped", moves, r.info("t000").Merging, r.st.Checkpoints.Head)
	}
}

func TestResendWritesTheCommandAgain(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Options{}, chain(1)...)
	if err := r.g.Start("t000"); err != nil {
		t.Fatal(err)
	}
	r.info("t000").Attempt = 1
	if err := r.do(t.Context(), next.EvResumedInFlight{}, next.ActResend{ID: "t000"}); err != nil {
		t.Fatal(err)
	}
	cmd, err := protocol.ReadCommand(r.o.opts.Layout.CommandFile("t000"))
	if err != nil || cmd.ID != "t000" || cmd.Attempt != 1 {
		t.Fatalf("command %+v, %v", cmd, err)
	}
}

// launchRecorder is a runtime that records what it was asked to launch.
type launchRecorder struct {
	*fakeRuntime
	launched *[]attempt.Attempt
}

func (l launchRecorder) Launch(_ context.Context, a attempt.Attempt) error {
	*l.launched = append(*l.launched, a)
	return nil
}

func TestRelaunchLaunchesTheResumedAttempt(t *testing.T) {
	t.Parallel()
	var launched []attempt.Attempt
	l := newLayout(t)
	r := newTestRun(t, Options{Runtime: launchRecorder{fakeRuntime: newFakeRuntime(l, completed), launched: &launched}}, chain(1)...)
	r.info("t000").Attempt = 2
	if err := r.do(t.Context(), next.EvResumedInFlight{}, next.ActRelaunch{ID: "t000"}); err != nil {
		t.Fatal(err)
	}
	if len(launched) != 1 || launched[0].TaskID != "t000" || launched[0].Attempt != 2 {
		t.Errorf("launched %+v, want t000's attempt 2", launched)
	}
}
