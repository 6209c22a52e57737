package orchestrator

import (
	"testing"
	"time"
)

// BenchmarkChain100 is the orchestration overhead of a 100-task chain with an
// instant agent: per task a state save, the task context, the command file,
// its pick-up by an in-process watcher over fsnotify, the report, the project
// context update and the archive — everything but the model.
func BenchmarkChain100(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		l := newLayout(b)
		rt := newFakeRuntime(l, completed)
		st := newTestState(b, chain(100)...)
		o := New(Options{Layout: l, Runtime: rt})
		b.StartTimer()
		start := time.Now()
		if err := o.Drive(b.Context(), st); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds())/100, "ms/task")
		if st.Status != RunCompleted {
			b.Fatalf("status %s", st.Status)
		}
	}
}
