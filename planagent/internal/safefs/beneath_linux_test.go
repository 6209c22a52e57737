package safefs

import (
	"os"
	"path/filepath"
	"testing"
)

// Where the kernel has no openat2 (before 5.6, or a seccomp filter hiding
// it) every path is walked: the same results.
func TestWithoutOpenat2(t *testing.T) {
	tr := newTree(t)
	tr.root.fast.off.Store(true)
	if err := tr.root.WriteFileAtomic("context/project/project-overview.md", []byte("o"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tr.root.Rename("context/project", "runs/r/project"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(tr.vol, "runs/r/project/project-overview.md")); err != nil || string(b) != "o" {
		t.Fatalf("moved file: %q, %v", b, err)
	}
	tr.plant(t, "context/task", tr.outside)
	if err := tr.root.MkdirAll("context/task/t3"); err != nil {
		t.Fatal(err)
	}
	tr.isDir(t, "context/task")
	tr.untouched(t)
	if err := tr.root.RemoveAll("runs/r"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(tr.vol, "runs/r")); !os.IsNotExist(err) {
		t.Errorf("runs/r left: %v", err)
	}
}
