package webui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/fswatch"
	"github.com/codeagent/codeagent/internal/jsonout"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// throttle is the least time between two re-reads of the run.
const throttle = 50 * time.Millisecond

// tailStart bounds how much of an events file a new stream replays.
const tailStart = 64 << 10

// TaskEvent is one line of a running task's events, as the page shows it.
type TaskEvent struct {
	Task string    `json:"task"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	Line string    `json:"line"`
}

// stream sends the run as server-sent events: "run" with the whole view
// whenever the state changes, "task_event" for each new line in a running
// task's events file, "problem" when the state cannot be read.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	st, ok := s.load(w, r)
	if !ok {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported by this connection", http.StatusInternalServerError)
		return
	}
	l := s.opts.Layout
	watcher := s.opts.Watch.Watch() // nil: the reconcile tick below re-reads
	defer fswatch.Close(watcher)
	for _, dir := range []string{l.Run(st.RunID), l.Reports()} {
		if watcher == nil {
			break
		}
		if err := watcher.Add(dir); err != nil {
			s.opts.Logger.Warn("web view: watch", "dir", dir, "err", err)
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	sse := &sseWriter{w: w}
	tails := &tailer{s: s, runID: st.RunID, offsets: map[string]int64{}, live: map[string]bool{}}
	var shown time.Time
	push := func(st *runrecord.State) error {
		if !st.Updated.Equal(shown) {
			shown = st.Updated
			sse.send("run", runview.Build(st, s.opts.View))
		}
		tails.read(st, sse)
		fl.Flush()
		return sse.err
	}
	if push(st) != nil {
		return
	}
	runID := st.RunID
	reload := func() error {
		st, err := runrecord.LoadState(l, runID, false)
		if err != nil {
			sse.send("problem", map[string]string{"error": err.Error()})
			fl.Flush()
			return sse.err
		}
		return push(st)
	}

	tick := time.NewTicker(s.opts.Reconcile)
	defer tick.Stop()
	// A change is shown at once, then at most once per gap: a task
	// streaming tokens into its events file writes without pause, and the
	// page needs no more. The gap grows with the cost of a reload (a
	// 10 000-task state takes a while to read and send), so following a
	// big run never takes more than a fifth of a core.
	pending := time.NewTimer(time.Hour)
	pending.Stop()
	armed := false
	gap := throttle
	var last time.Time
	refresh := func() error {
		began := time.Now()
		err := reload()
		last = time.Now()
		gap = max(throttle, 4*last.Sub(began))
		return err
	}
	for {
		select {
		case <-r.Context().Done():
			// The server stops (the run ended): the page gets the last picture.
			_ = reload()
			return
		case ev, ok := <-fswatch.Events(watcher):
			if !ok {
				return
			}
			// The temp files of atomic writes say nothing yet; their rename does.
			if armed || strings.HasPrefix(filepath.Base(ev.Name), ".") {
				continue
			}
			if wait := gap - time.Since(last); wait > 0 {
				armed = true
				pending.Reset(wait)
				continue
			}
			if refresh() != nil {
				return
			}
		case werr, ok := <-fswatch.Errors(watcher):
			if !ok {
				return
			}
			s.opts.Logger.Warn("web view: watch", "err", werr)
		case <-pending.C:
			armed = false
			if refresh() != nil {
				return
			}
		case <-tick.C:
			if refresh() != nil {
				return
			}
		}
	}
}

type sseWriter struct {
	w   io.Writer
	err error
}

func (s *sseWriter) send(event string, v any) {
	if s.err != nil {
		return
	}
	b, err := jsonout.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode %s event: %w", event, err)
		return
	}
	_, s.err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b)
}

// tailer follows the events files of the run's running tasks.
type tailer struct {
	s       *Server
	runID   string
	offsets map[string]int64
	live    map[string]bool // the events files (by stem) of the attempts in progress at the last read: their last lines are still read once
}

func (t *tailer) read(st *runrecord.State, out *sseWriter) {
	live := map[string]bool{}
	for _, task := range st.Tasks {
		if task.Status != taskgraph.InProgress {
			continue
		}
		// Attempts side by side each write their own file (protocol.Stem).
		in := st.Info[task.ID]
		if in == nil || in.Series == nil {
			live[task.ID] = true
			continue
		}
		for _, r := range in.Results {
			if r.Attempt >= in.Series.From && (r.Status == runrecord.AttemptRunning || r.Status == runrecord.AttemptChecking) {
				live[protocol.Stem(task.ID, r.Attempt)] = true
			}
		}
	}
	for id := range t.live {
		t.follow(id, out)
	}
	for id := range live {
		if !t.live[id] {
			t.follow(id, out)
		}
	}
	t.live = live
}

func (t *tailer) follow(stem string, out *sseWriter) {
	id, _, _ := protocol.SplitStem(stem)
	p := t.s.opts.Layout.EventsFile(stem)
	f, err := protocol.OpenRegular(p, os.O_RDONLY, 0) // a FIFO planted in the volumes must not block
	if err != nil {
		return // not written yet, or archived
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	off, seen := t.offsets[stem]
	if !seen && fi.Size() > tailStart {
		off = fi.Size() - tailStart
	}
	if fi.Size() < off {
		off = 0 // a new attempt's file replaced the archived one
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return
	}
	rd := bufio.NewReader(f)
	if !seen && off > 0 {
		skipped, _ := rd.ReadBytes('\n') // the first line is cut
		off += int64(len(skipped))
	}
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			break // a partial line is read again next time
		}
		off += int64(len(line))
		var e events.Event
		if json.Unmarshal(bytes.TrimSpace(line), &e) != nil || e.RunID != t.runID {
			continue
		}
		e.TaskID = "" // the page groups by task already
		text := events.Line(e)
		if text == "" {
			continue
		}
		out.send("task_event", TaskEvent{Task: id, Time: e.Time, Type: string(e.Type), Line: text})
	}
	t.offsets[stem] = off
}
