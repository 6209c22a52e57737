package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A quarantine is handed out empty and, put back, emptied of what it was
// told of (or of everything) and handed out again rather than made anew.
func TestQuarantines(t *testing.T) {
	t.Parallel()
	qs := &quarantines{dir: t.TempDir()}
	// A leftover of a killed planagent at the name it gets is emptied.
	write(t, qs.dir, "objects-q1/ab/left", "left")
	q, err := qs.take()
	if err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(q); err != nil || len(entries) != 0 {
		t.Fatalf("a new quarantine: %v, %v", entries, err)
	}
	write(t, q, "ab/cdef", "object")
	write(t, q, "index", "index")
	qs.put(q, []string{filepath.Join("ab", "cdef")})
	if _, err := os.Stat(filepath.Join(q, "ab", "cdef")); !os.IsNotExist(err) {
		t.Errorf("a listed file is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(q, "index")); err != nil {
		t.Errorf("a file not listed is gone: %v", err)
	}
	again, err := qs.take()
	if err != nil || again != q {
		t.Fatalf("took %q (%v), want the one put back, %q", again, err, q)
	}
	other, err := qs.take()
	if err != nil || other == q {
		t.Fatalf("took %q (%v) while %q is in use", other, err, q)
	}
	write(t, other, "x/y", "object")
	qs.put(other, nil)
	if files, err := listFiles(other); err != nil || len(files) != 0 {
		t.Errorf("put back with no list, it still has %v (%v)", files, err)
	}
	qs.forget()
	next, err := qs.take()
	if err != nil || slices.Contains([]string{q, other}, next) {
		t.Errorf("after forget, took %q (%v): one forgotten", next, err)
	}
}

// A keep ref is made once per commit, again only when its making did not
// happen (an error, a pending commit) or the refs were forgotten.
func TestKeepRefsOnce(t *testing.T) {
	t.Parallel()
	var k keepRefs
	calls := 0
	made := func(ok bool, err error) func() (bool, error) {
		return func() (bool, error) { calls++; return ok, err }
	}
	for range 2 {
		if err := k.once("a", made(true, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("made %d times, want once", calls)
	}
	if err := k.once("b", made(false, os.ErrPermission)); err == nil {
		t.Error("the error of the making is not returned")
	}
	_ = k.once("b", made(false, nil))
	_ = k.once("b", made(true, nil))
	_ = k.once("b", made(true, nil))
	if calls != 4 {
		t.Errorf("%d makings, want 4: after an error and a ref not made, it is made again", calls)
	}
	k.madeBy("c")
	_ = k.once("c", made(true, nil))
	k.forget()
	_ = k.once("a", made(true, nil))
	if calls != 5 {
		t.Errorf("%d makings, want 5: none for a ref another command made, one after forget", calls)
	}
}
