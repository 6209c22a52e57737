package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The pool on its own, with copies that are directories and saved states
// (no git): a copy put back is taken for the commit it was made at first,
// ready ones before the rest; a copy without a saved state is never pooled;
// a recycle takes room in the pool, and NewCopy's wait for it ends with it.
func TestCopyPool(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cp := &copyPool{states: copyStates{dir: filepath.Join(root, "states")}}
	copyAt := func(name, commit string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		write(t, dir, ".git/index", name)
		if err := cp.states.save(dir); err != nil {
			t.Fatal(err)
		}
		cp.made(dir, commit)
		return dir
	}
	a, b := copyAt("a", "A"), copyAt("b", "B")
	if cp.put(a, true) {
		t.Fatal("put into a pool that is not set")
	}
	cp.dir, cp.max = filepath.Join(root, "pool"), 2
	unfinished := filepath.Join(root, "unfinished")
	write(t, unfinished, "f", "x")
	if cp.put(unfinished, false) {
		t.Error("a copy with no saved state was pooled")
	}
	if !cp.put(a, true) || !cp.put(b, false) {
		t.Fatal("put refused with room in the pool")
	}
	if cp.startRecycle("A") {
		t.Error("a recycle started with the pool full")
	}
	for _, want := range []struct {
		commit, from string
		ready        bool
	}{{"B", "b", false}, {"C", "a", true}} {
		dir := filepath.Join(root, "taken-"+want.commit)
		taken, ready, at := cp.take(dir, want.commit)
		if !taken || ready != want.ready || read(t, dir, ".git/index") != want.from {
			t.Errorf("take for %s: taken %v ready %v at %q, holds %q; want %s's copy, ready %v",
				want.commit, taken, ready, at, read(t, dir, ".git/index"), want.from, want.ready)
		}
		if !cp.states.has(dir) {
			t.Errorf("the state of the copy taken for %s did not follow it", want.commit)
		}
	}
	if taken, _, _ := cp.take(filepath.Join(root, "none"), "A"); taken {
		t.Error("taken from an empty pool")
	}

	// A recycle to A under way: the wait for a copy of A ends when it does.
	if !cp.startRecycle("A") {
		t.Fatal("no recycle with an empty pool")
	}
	waited := make(chan error, 1)
	go func() { waited <- cp.awaitRecycle(t.Context(), "A") }()
	select {
	case err := <-waited:
		t.Fatalf("the wait ended (%v) with the recycle under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	cp.endRecycle("A")
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := cp.drain(func(dir string) error { ran = dir == cp.dir; return nil }); err != nil || !ran {
		t.Errorf("drain: %v, ran with the pool's directory: %v", err, ran)
	}
	if _, err := os.Stat(cp.dir); err != nil {
		t.Errorf("drain itself removed the pool: %v", err)
	}
}
