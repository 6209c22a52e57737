package agent

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// context/memory.md is in the volumes: a FIFO there reads as no memory at
// once instead of blocking the watcher that starts a task.
func TestReadMemoryRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.md")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- readMemory(path) }()
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("memory %q from a FIFO", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading memory blocks on a FIFO")
	}
}
