package docker

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// logsTail waits briefly for the log stream to drain (it ends with the
// container) and formats its last lines for an error message.
func (d *Docker) logsTail(run *agentContainer) string {
	select {
	case <-run.logsDone:
	case <-time.After(layout.LogsDrain):
	}
	tail := run.tail.String()
	if tail == "" {
		return " (no log output)"
	}
	return ": last log lines:\n" + tail
}

// lineTail splits a byte stream into lines, copies each to out and keeps the
// last n for error messages. secret, when long enough to be unambiguous, is
// masked in both.
type lineTail struct {
	mu      sync.Mutex
	out     io.Writer
	n       int
	secret  string
	partial []byte
	lines   []string
	keep    func(line []byte) bool // which lines go to out (all are kept for errors)
}

func newLineTail(out io.Writer, n int, secret string) *lineTail {
	if len(secret) < 8 {
		secret = ""
	}
	return &lineTail{out: out, n: n, secret: secret}
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.addLine(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	return len(p), nil
}

// Flush emits a last line that had no newline.
func (t *lineTail) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		t.addLine(string(t.partial))
		t.partial = nil
	}
}

func (t *lineTail) addLine(line string) {
	line = output.Redact(strings.TrimSuffix(line, "\r"), t.secret)
	if t.out != nil && (t.keep == nil || t.keep([]byte(line))) {
		// A failing log sink must not stop the container's log stream.
		_, _ = io.WriteString(t.out, line+"\n")
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
