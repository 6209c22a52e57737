package cmdutil

import (
	"os"
	"testing"

	"github.com/creack/pty"
)

// /dev/null is a character device, not a terminal; a pty is one.
func TestIsTerminal(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if IsTerminal(devnull) {
		t.Error("/dev/null taken for a terminal")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if !IsTerminal(tty) {
		t.Error("a pty not taken for a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(r) {
		t.Error("a pipe taken for a terminal")
	}
}
