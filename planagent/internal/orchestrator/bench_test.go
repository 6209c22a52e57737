package orchestrator

import (
	"fmt"
	"testing"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

// The orchestration overhead with an instant agent: per task a journal
// record, the task context, the command file, its pick-up by an in-process
// watcher over fsnotify, the report, the project context update and the
// archive — everything but the model. A chain runs its tasks one after the
// other; a fan-out is one task and N-1 tasks depending on it, four at a
// time. The per-task figure should not grow with N (make bench runs the
// 10 000-task ones; plain go test runs no benchmark).

func BenchmarkChain100(b *testing.B)    { benchDrive(b, benchChain(100), 1) }
func BenchmarkChain1000(b *testing.B)   { benchDrive(b, benchChain(1000), 1) }
func BenchmarkChain10000(b *testing.B)  { benchDrive(b, benchChain(10000), 1) }
func BenchmarkFanOut100(b *testing.B)   { benchDrive(b, benchFanOut(100), 4) }
func BenchmarkFanOut1000(b *testing.B)  { benchDrive(b, benchFanOut(1000), 4) }
func BenchmarkFanOut10000(b *testing.B) { benchDrive(b, benchFanOut(10000), 4) }

func benchDrive(b *testing.B, tasks []plan.Task, parallel int) {
	for b.Loop() {
		b.StopTimer()
		l := newLayout(b)
		rt := newFakeRuntime(l, completed)
		st := newTestState(b, tasks...)
		o := New(Options{Layout: l, Runtime: rt, Parallel: parallel})
		b.StartTimer()
		start := time.Now()
		if err := o.Drive(b.Context(), st); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(len(tasks)), "ms/task")
		b.ReportMetric(elapsed.Seconds(), "s/run")
		if st.Status != runrecord.RunCompleted {
			b.Fatalf("status %s", st.Status)
		}
	}
}

func benchID(i int) string { return fmt.Sprintf("t%05d", i) }

func benchChain(n int) []plan.Task {
	tasks := make([]plan.Task, n)
	for i := range tasks {
		tasks[i] = plan.Task{ID: benchID(i), Description: "task " + benchID(i), Dependencies: []string{}}
		if i > 0 {
			tasks[i].Dependencies = []string{benchID(i - 1)}
		}
	}
	return tasks
}

func benchFanOut(n int) []plan.Task {
	tasks := make([]plan.Task, n)
	for i := range tasks {
		tasks[i] = plan.Task{ID: benchID(i), Description: "task " + benchID(i), Dependencies: []string{}}
		if i > 0 {
			tasks[i].Dependencies = []string{benchID(0)}
		}
	}
	return tasks
}
