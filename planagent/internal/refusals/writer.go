// Package refusals holds the egress refusals file: `planagent gateway`
// (the compose file's gateway service) appends each request its egress
// proxy turned away as a JSON line, and a planagent run that reuses the
// compose watcher follows it, so that a refusal there is an event of the
// run and part of the task's result, as with the other runtimes.
//
// The file is bounded: at MaxSize it is renamed to NAME.1 (replacing the
// previous one) and a new one begins, so an agent looping on a blocked
// download fills at most twice MaxSize of the disk.
package refusals

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/egress"
)

// MaxSize is where the gateway rotates the file.
const MaxSize = 4 << 20

// Bounds of one line's fields: the host and reason come from what an agent
// asked for, which may be as long as an HTTP header.
const (
	maxHost   = 512
	maxReason = 1024
	maxClient = 256
	// noteRoom is kept free at the end of a file for the line that says
	// it was rotated.
	noteRoom = 512
)

// Record is one line of the file: a refusal, or (Note set) a line about
// the file itself.
type Record struct {
	Time time.Time `json:"time"`
	// Client names the attempt ("<task>.<n>", config.AttemptProxyEnv);
	// "" is the watcher's own request, or an acceptance command's.
	Client string `json:"client,omitempty"`
	Method string `json:"method,omitempty"`
	Host   string `json:"host,omitempty"`
	Port   int    `json:"port,omitempty"`
	Reason string `json:"reason,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Refusal is the record as the egress proxy's type.
func (r Record) Refusal() egress.Refusal {
	return egress.Refusal{Method: r.Method, Host: r.Host, Port: r.Port, Reason: r.Reason, Client: r.Client}
}

// Writer appends refusals to the file. It is safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	path  string
	limit int64
	f     *os.File // nil once writing failed: the log has them then
	size  int64
	log   *slog.Logger
	now   func() time.Time
}

// Create opens path for appending (creating it), to be rotated at limit
// bytes (0: MaxSize). A link at path is refused, not followed.
func Create(path string, limit int64, log *slog.Logger) (*Writer, error) {
	if limit <= 0 {
		limit = MaxSize
	}
	if limit < 4*noteRoom {
		return nil, fmt.Errorf("refusals file %s: a limit of %d bytes is too small (at least %d)", path, limit, 4*noteRoom)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{path: path, limit: limit, log: log, now: time.Now}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("refusals file: %w (the gateway needs to create it: is its directory there and writable by this user?)", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", w.path, fi.Mode().Type())
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("refusals file: %w", err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// Add appends r. A failure is logged once and ends the file: later
// refusals are in the gateway's log only.
func (w *Writer) Add(r egress.Refusal) {
	line := marshal(Record{Time: w.now().UTC(), Client: clip(r.Client, maxClient), Method: clip(r.Method, 32),
		Host: clip(r.Host, maxHost), Port: r.Port, Reason: clip(r.Reason, maxReason)})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return
	}
	if w.size+int64(len(line))+noteRoom > w.limit {
		if err := w.rotate(); err != nil {
			w.fail(err)
			return
		}
	}
	if err := w.write(line); err != nil {
		w.fail(err)
	}
}

// write appends line in one write: a reader sees whole lines only.
func (w *Writer) write(line []byte) error {
	n, err := w.f.Write(line)
	w.size += int64(n)
	return err
}

// rotate ends the file with a note, moves it to NAME.1 and begins another.
func (w *Writer) rotate() error {
	base := filepath.Base(w.path)
	note := marshal(Record{Time: w.now().UTC(),
		Note: fmt.Sprintf("rotated at %d bytes: newer refusals are in %s, this file is %s.1 until the next rotation", w.size, base, base)})
	if err := w.write(note); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("refusals file: %w", err)
	}
	w.f = nil
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		return fmt.Errorf("refusals file: rotate: %w", err)
	}
	w.log.Info("the refusals file reached its size limit: rotated", "file", w.path, "previous", w.path+".1", "limit", w.limit)
	return w.open()
}

func (w *Writer) fail(err error) {
	w.log.Warn("the refusals file is no longer written: later refusals are in this log only", "file", w.path, "err", err)
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// Close closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func marshal(r Record) []byte {
	b, _ := json.Marshal(r) // strings and numbers: it cannot fail
	return append(b, '\n')
}

// clip shortens s to at most n bytes of valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
