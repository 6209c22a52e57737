package docker

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Launches of several attempts overlap in the runtime: nothing in it holds
// one container's create and start while another's are under way. Each
// create waits until all four are in (a minute at most).
func TestDockerFakeLaunchesTogether(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	var in, most atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	fake.beforeCreate = func() {
		n := in.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n == 4 {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
		case <-time.After(time.Minute):
		}
		in.Add(-1)
	}
	d, a := fakeDocker(t, fake)
	l := d.opts.Volumes
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, task := range []string{"t1", "t2", "t3", "t4"} {
		b := a
		b.TaskID, b.Dir, b.Rel = task, l.Attempt("r1", task, 1), l.AttemptRel("r1", task, 1)
		if err := os.MkdirAll(b.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = d.Launch(t.Context(), b) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("launch %d: %v", i+1, err)
		}
	}
	if most.Load() != 4 || fake.live() != 4 {
		t.Errorf("%d creates at once, %d containers; want 4 and 4", most.Load(), fake.live())
	}
}
