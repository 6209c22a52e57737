//go:build unix

package protocol

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nothing but a regular file is read, and refusing takes no time: a FIFO
// without a writer would otherwise block the reader for good.
func TestReadRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "ok.md")
	if err := os.WriteFile(regular, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	if b, err := ReadRegular(regular, 0); err != nil || string(b) != "hello" {
		t.Fatalf("regular file: %q, %v", b, err)
	}
	if b, err := ReadRegular(regular, 2); err != nil || string(b) != "he" {
		t.Fatalf("limited read: %q, %v", b, err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", link: "symbolic link", sock: "", dir: "a directory"} {
		start := time.Now()
		_, err := ReadRegular(path, 0)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err %v, want ErrNotRegular naming the path and %q", path, err, want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refusing took %v", path, d)
		}
	}
	// Writers are refused too: O_WRONLY on a FIFO without a reader would block.
	if _, err := OpenRegular(fifo, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		t.Error("opening a FIFO for writing was not refused")
	}
	if _, err := ReadReport(fifo); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadReport of a FIFO: %v", err)
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}
