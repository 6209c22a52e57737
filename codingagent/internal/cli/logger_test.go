package cli

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// The watcher logs text for a person on a terminal and JSON otherwise
// (docker logs, planagent reading a pipe): /dev/null and pipes are not
// terminals.
func TestWatchLoggerFollowsTheTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	newLogger(tty).Info("on a terminal")
	line, _ := bufio.NewReader(ptmx).ReadString('\n')
	if !strings.Contains(line, `level=INFO msg="on a terminal"`) {
		t.Errorf("on a pty: %q, want slog text", line)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	newLogger(w).Info("into a pipe")
	w.Close()
	line, _ = bufio.NewReader(r).ReadString('\n')
	if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"msg":"into a pipe"`) {
		t.Errorf("into a pipe: %q, want JSON", line)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if isTerminal(devnull) {
		t.Error("/dev/null taken for a terminal")
	}
}
