package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// awaitHeartbeat returns once a heartbeat file written after since appears in
// the watchers dir. fsnotify gives the event at once; a 1s rescan covers bind
// mounts that do not deliver events. A container exit, ctx or the 30s
// deadline end the wait with the container's last log lines.
func (d *Docker) awaitHeartbeat(ctx context.Context, run *watcherContainer, since time.Time) error {
	dir := d.opts.Volumes.Watchers()
	var events chan fsnotify.Event
	var errs chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		d.log.Warn("fsnotify unavailable: polling the watchers dir", "err", err)
	} else {
		defer w.Close()
		if err := w.Add(dir); err != nil {
			d.log.Warn("cannot watch the watchers dir: polling it", "dir", dir, "err", err)
		} else {
			events, errs = w.Events, w.Errors
		}
	}
	fresh := func() bool { _, ok := freshHeartbeat(dir, since); return ok }
	if fresh() {
		return nil
	}
	rescan := time.NewTicker(time.Second)
	defer rescan.Stop()
	deadline := time.NewTimer(startDeadline)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the codingagent watcher's first heartbeat: %w", ctx.Err())
		case <-run.done:
			return fmt.Errorf("%w before its first heartbeat%s", run.exitErr, d.logsTail(run))
		case <-deadline.C:
			return fmt.Errorf("codingagent container %s wrote no heartbeat to %s within %s: is %s's entrypoint `codingagent watch --volumes %s`?%s",
				shortID(run.id), dir, startDeadline, d.opts.Image, containerVolumes, d.logsTail(run))
		case _, ok := <-events:
			if !ok {
				events = nil
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
			} else if !errors.Is(err, fsnotify.ErrEventOverflow) {
				d.log.Warn("watching the watchers dir", "err", err)
			}
		case <-rescan.C:
		}
		if fresh() {
			return nil
		}
	}
}

// logsTail waits briefly for the log stream to drain (it ends with the
// container) and formats its last lines for an error message.
func (d *Docker) logsTail(run *watcherContainer) string {
	select {
	case <-run.logsDone:
	case <-time.After(logsDrain):
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
	line = redact(strings.TrimSuffix(line, "\r"), t.secret)
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

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
