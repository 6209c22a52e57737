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

	"github.com/fsnotify/fsnotify"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// fakeRuntime is an in-process watcher: it answers each command file with
// the report its answer function returns (nil: no report), instantly. It
// exercises the real file protocol and fsnotify, without an LLM.
type fakeRuntime struct {
	layout volume.Layout
	answer func(c *protocol.Command) *protocol.Report
	exec   func(command string) attempt.ExecResult
	// execCtx, when set, runs the commands instead, with Exec's context.
	execCtx func(ctx context.Context, command string) attempt.ExecResult
	// execDir, when set, runs them with the directory they run in.
	execDir func(dir, command string) attempt.ExecResult

	mu        sync.Mutex
	starts    int
	seen      map[string]int // commands received per task id
	cancel    context.CancelFunc
	done      chan struct{}
	exited    chan attempt.Exit
	commands  []string
	abandoned []string // attempts given up on ("task.n")
}

func newFakeRuntime(l volume.Layout, answer func(c *protocol.Command) *protocol.Report) *fakeRuntime {
	return &fakeRuntime{layout: l, answer: answer, seen: map[string]int{}, exited: make(chan attempt.Exit, 1)}
}

func completed(c *protocol.Command) *protocol.Report {
	return &protocol.Report{ID: c.ID, RunID: c.RunID, Attempt: c.Attempt, Status: protocol.StatusCompleted,
		Summary: "did " + c.ID, Tokens: protocol.Tokens{Prompt: 10, Completion: 2}, Duration: protocol.Duration(time.Millisecond)}
}

func (f *fakeRuntime) Start(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(f.layout.Commands()); err != nil {
		return err
	}
	// One heartbeat per start, like a watcher's first: the orchestrator
	// watches it go stale when a test says so with a short HeartbeatTimeout.
	if err := protocol.WriteHeartbeat(f.layout.Watchers(), protocol.Heartbeat{ID: "fake", Started: time.Now(), Updated: time.Now()}); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f.mu.Lock()
	f.starts++
	prevCancel, prevDone := f.cancel, f.done
	f.cancel, f.done = cancel, done
	f.mu.Unlock()
	// A start after the watcher died (a test's Exited) replaces it: the
	// previous loop ends here, so Stop's one cancel leaves none running.
	if prevCancel != nil {
		prevCancel()
		<-prevDone
	}
	go func() {
		defer close(done)
		defer w.Close()
		f.scan()
		for {
			select {
			case <-wctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				f.scan()
			case <-w.Errors:
			}
		}
	}()
	return nil
}

func (f *fakeRuntime) scan() {
	entries, _ := os.ReadDir(f.layout.Commands())
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") {
			continue
		}
		src := filepath.Join(f.layout.Commands(), name)
		dst := filepath.Join(f.layout.Claimed(), name)
		if os.Rename(src, dst) != nil {
			continue
		}
		c, err := protocol.ReadCommand(dst)
		if err != nil {
			continue
		}
		f.mu.Lock()
		f.seen[c.ID]++
		f.commands = append(f.commands, c.ID)
		f.mu.Unlock()
		if r := f.answer(c); r != nil {
			// Under the stem of the command claimed, as a watcher does.
			_ = protocol.WriteReport(f.layout.ReportFile(strings.TrimSuffix(name, ".md")), r)
			_ = os.Remove(dst)
		}
	}
}

func (f *fakeRuntime) Exited() <-chan attempt.Exit { return f.exited }

func (f *fakeRuntime) Launch(context.Context, attempt.Attempt) error { return nil }

func (f *fakeRuntime) Abandon(_ context.Context, id string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.abandoned = append(f.abandoned, attempt.Name(id, n))
	return nil
}

func (f *fakeRuntime) Exec(ctx context.Context, dir, command string, timeout time.Duration) (attempt.ExecResult, error) {
	if f.execCtx != nil {
		return f.execCtx(ctx, command), nil
	}
	if f.execDir != nil {
		return f.execDir(dir, command), nil
	}
	if f.exec != nil {
		return f.exec(command), nil
	}
	return attempt.ShellExec(ctx, dir, command, timeout)
}

func (f *fakeRuntime) Stop(ctx context.Context) error {
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (f *fakeRuntime) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[id]
}

func newLayout(t testing.TB) volume.Layout {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	return l
}

func newTestState(t testing.TB, tasks ...plan.Task) *runrecord.State {
	p := &plan.Plan{Title: "test", Overview: "a test plan", Tasks: tasks}
	st, err := runrecord.NewState("run-test-1", "the goal", p, llmUsage(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func chain(n int) []plan.Task {
	tasks := make([]plan.Task, n)
	for i := range tasks {
		tasks[i] = plan.Task{ID: taskID(i), Description: "task " + taskID(i), Dependencies: []string{}}
		if i > 0 {
			tasks[i].Dependencies = []string{taskID(i - 1)}
		}
	}
	return tasks
}

func taskID(i int) string { return "t" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

var errBoom = errors.New("boom")

// testClock is the run's clock, moved by the test, and its tick: no test
// waits for a real tick or a real deadline.
type testClock struct {
	mu    sync.Mutex
	now   time.Time
	ticks chan time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Now(), ticks: make(chan time.Time)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// tickAfter moves the clock on by d and hands the loop one tick, without
// blocking the caller (a fake runtime answering a command).
func (c *testClock) tickAfter(t testing.TB, d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	go func() {
		select {
		case c.ticks <- now:
		case <-t.Context().Done():
		}
	}()
}

// deadline is the test's context, cancelled after a generous minute of
// real time: a run that waits for a tick no test sends fails instead of
// hanging.
func (c *testClock) deadline(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
