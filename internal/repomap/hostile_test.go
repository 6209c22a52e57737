package repomap

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The cache is in the volumes, which the agent can write: a FIFO where the
// cache file goes is reported, not waited on (it would freeze planagent's
// planner), and the map is still made.
func TestCacheFIFOIsRefused(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc Hello() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	abs, _ := filepath.Abs(root)
	if err := os.MkdirAll(filepath.Dir(cachePath(cacheDir, abs, false)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(cachePath(cacheDir, abs, false), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		s, err := Section(t.Context(), Options{Root: root, CacheDir: cacheDir, Tokens: 200})
		if err != nil {
			t.Log(err)
		}
		done <- s
	}()
	select {
	case s := <-done:
		if s == "" {
			t.Error("no map made")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the repo map hangs on a FIFO in its cache dir")
	}
}
