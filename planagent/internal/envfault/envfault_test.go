package envfault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestIs(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("this test writes to /dev/full (Linux): %v", err)
	}
	_, werr := f.Write([]byte("x"))
	f.Close()
	cases := []struct {
		err  error
		want bool
	}{
		{werr, true}, // a real ENOSPC from /dev/full
		{fmt.Errorf("commit: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}), true},
		{errors.New("git commit: fatal: unable to write new index file: No space left on device"), true},
		{fmt.Errorf("exec: %w: unexpected EOF", ErrEngine), true},
		{errors.New("acceptance command exited 1"), false},
		{errors.New("no such file or directory"), false},
		{nil, false},
	}
	for _, c := range cases {
		if got := Is(c.err); got != c.want {
			t.Errorf("Is(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestDisconnected(t *testing.T) {
	_, dialErr := net.Dial("unix", t.TempDir()+"/no.sock") // a real dial to a socket that is not there
	for _, err := range []error{dialErr, io.ErrUnexpectedEOF, fmt.Errorf("wait: %w", syscall.ECONNRESET)} {
		if !Disconnected(err) {
			t.Errorf("Disconnected(%v) = false", err)
		}
	}
	if Disconnected(errors.New("Error response from daemon: No such image: x")) {
		t.Error("an answer of the engine taken for a broken connection")
	}
}

func TestHint(t *testing.T) {
	if h := Hint(fmt.Errorf("x: %w", ErrEngine)); !strings.Contains(h, "engine") {
		t.Errorf("engine hint %q", h)
	}
	if h := Hint(syscall.ENOSPC); !strings.Contains(h, "free disk space") {
		t.Errorf("disk hint %q", h)
	}
}
