package webui

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The page reads events and reports out of the volumes, where the agent's
// shell can plant a FIFO or a symbolic link: neither is waited on or
// followed.
func TestOpenRegularRefusesFIFOAndSymlink(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(ok, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo, link := filepath.Join(dir, "fifo.jsonl"), filepath.Join(dir, "link.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	f, err := openRegular(ok)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{fifo, link} {
		done := make(chan error, 1)
		go func() {
			f, err := openRegular(p)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s was opened", filepath.Base(p))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("opening %s blocks", filepath.Base(p))
		}
	}
}
