package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// slowLaunches is a runtime whose Launch takes as long as a container's
// create and start: each waits until want launches are under way at once
// (or gives up after a minute: launches that never overlap).
type slowLaunches struct {
	*fakeRuntime
	want int
	fail string // a task whose launch fails

	mu      sync.Mutex
	now     int // launches under way
	most    int // most launches under way at once
	all     chan struct{}
	allOnce sync.Once
}

func (s *slowLaunches) Launch(ctx context.Context, a attempt.Attempt) error {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	if s.now >= s.want {
		s.allOnce.Do(func() { close(s.all) })
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	select {
	case <-s.all:
	case <-time.After(time.Minute):
	}
	if a.TaskID == s.fail {
		return errors.New("create a container from img: no space left on device")
	}
	return s.fakeRuntime.Launch(ctx, a)
}

func fanOut(n int) []plan.Task {
	tasks := make([]plan.Task, n)
	for i := range tasks {
		tasks[i] = plan.Task{ID: fmt.Sprintf("p%d", i+1), Description: fmt.Sprintf("part %d", i+1), Dependencies: []string{}}
	}
	return tasks
}

// At --parallel 4, the four ready tasks' launches are under way at the
// same time, not one after the other.
func TestDriveLaunchesTogether(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := &slowLaunches{fakeRuntime: newFakeRuntime(l, completed), want: 4, all: make(chan struct{})}
	st := newTestState(t, fanOut(6)...)
	if err := New(Options{Layout: l, Runtime: rt, Parallel: 4}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted {
		t.Fatalf("status %s", st.Status)
	}
	if rt.most != 4 {
		t.Errorf("at most %d launches at once, want 4", rt.most)
	}
}

// A launch that fails among others fails the run with its error, after
// the others' launches are done (the runtime's Stop removes what started).
func TestDriveLaunchFailsAmongOthers(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	rt := &slowLaunches{fakeRuntime: newFakeRuntime(l, completed), want: 3, all: make(chan struct{}), fail: "p2"}
	st := newTestState(t, fanOut(3)...)
	err := New(Options{Layout: l, Runtime: rt, Parallel: 3}).Drive(t.Context(), st)
	if err == nil || !strings.Contains(err.Error(), "start task p2: create a container from img: no space left on device") {
		t.Fatalf("Drive = %v", err)
	}
	if rt.most != 3 {
		t.Errorf("at most %d launches at once, want 3", rt.most)
	}
}

// The death of an earlier attempt's agent, noticed only once the next
// attempt is under way (a container that exits after its report was
// archived), does not take the next attempt for dead.
func TestDriveStaleDeathIgnored(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	var rt *fakeRuntime
	rt = newFakeRuntime(l, func(c *protocol.Command) *protocol.Report {
		go func() {
			switch c.Attempt {
			case 1:
				rt.exited <- attempt.Exit{TaskID: c.ID, Attempt: 1, Err: errBoom}
			case 2:
				rt.exited <- attempt.Exit{TaskID: c.ID, Attempt: 1, Err: errors.New("attempt 1's container, late")}
				// Once the orchestrator took the late death, the report.
				_ = protocol.WriteReport(l.ReportFile(c.ID), completed(c))
			}
		}()
		return nil
	})
	rt.exited = make(chan attempt.Exit) // a send returns once the orchestrator took it
	st := newTestState(t, chain(1)...)
	if err := New(Options{Layout: l, Runtime: rt, MaxRetries: 2}).Drive(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if st.Status != runrecord.RunCompleted || rt.count("t000") != 2 {
		t.Fatalf("status %s, dispatched %d times, want completed after 2", st.Status, rt.count("t000"))
	}
}
