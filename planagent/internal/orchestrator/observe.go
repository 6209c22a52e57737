package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The observer turns what it sees (report files, the clock, heartbeats, the
// runtime) into events; next decides what they mean: a stale report, an
// attempt past its deadline, a silent watcher, which tasks an agent's
// death takes with it.

// adoptInProgress makes in-progress tasks of a resumed run in-flight again.
func (r *run) adoptInProgress(ctx context.Context) error {
	l := r.o.opts.Layout
	for _, t := range r.g.Tasks() {
		if t.Status != taskgraph.InProgress {
			continue
		}
		info := r.info(t.ID)
		r.inflight[t.ID] = r.newFlight(info.Attempt)
		if exists(l.ReportFile(t.ID)) || exists(l.ClaimFile(t.ID)) {
			continue // its report is waiting, or a watcher has it
		}
		if !exists(l.CommandFile(t.ID)) {
			// Crashed between saving the state and writing the command: the
			// copy may be half made, so it is made again.
			if r.isolated() {
				if err := r.prepareCopy(ctx, t.ID, info); err != nil {
					return err
				}
			}
			if err := r.writeCommand(t, info); err != nil {
				return err
			}
		}
		if err := r.launch(ctx, t.ID, info); err != nil {
			return err
		}
	}
	return nil
}

// collect returns an event for every report that has arrived for an
// in-flight task, stale or not: next tells. It scans rather than trusting
// single fsnotify events, so nothing is missed after an overflow or while
// planagent was down.
func (r *run) collect() []event {
	l := r.o.opts.Layout
	var out []event
	for _, id := range slices.Sorted(maps.Keys(r.inflight)) {
		p := l.ReportFile(id)
		if !exists(p) {
			continue
		}
		rep, err := protocol.ReadReport(p)
		if err != nil {
			out = append(out, next.EvBadReport{ID: id, Err: err})
			continue
		}
		out = append(out, reported{ID: id, Report: rep})
	}
	return out
}

// lastHeartbeat is the newest watcher heartbeat's own updated time in
// dir, as every reader of heartbeats judges them; zero when there is none.
func lastHeartbeat(dir string) time.Time {
	hb, ok := protocol.LatestHeartbeat(dir) // the one judgement: its updated time
	if !ok {
		return time.Time{}
	}
	return hb.Updated
}

// agentDied is the death of an attempt's agent, or of the shared watcher,
// with the tasks in flight that reported before it: next tells which
// tasks it takes with it.
func (r *run) agentDied(ex attempt.Exit) next.EvAgentDied {
	ev := next.EvAgentDied{TaskID: ex.TaskID, Attempt: ex.Attempt, Cause: ex.Err}
	for _, id := range slices.Sorted(maps.Keys(r.inflight)) {
		if exists(r.o.opts.Layout.ReportFile(id)) {
			ev.Reported = append(ev.Reported, id)
		}
	}
	return ev
}

// progress shows what a running task is doing, from its events file.
func (r *run) progress(name string) {
	base := filepath.Base(name)
	id, ok := strings.CutSuffix(base, ".events.jsonl")
	if !ok {
		return
	}
	f, ok := r.inflight[id]
	if !ok {
		return
	}
	file, err := protocol.OpenRegular(name, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	rd := bufio.NewReader(file)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return // a partial line is read again next time
		}
		f.offset += int64(len(line))
		var ev events.Event
		if json.Unmarshal(line, &ev) != nil || ev.Type != events.ToolCall {
			continue
		}
		r.o.opts.Events.Emit(events.Event{Type: events.ToolCall, RunID: r.st.RunID, TaskID: id, Tool: ev.Tool, Args: ev.Args})
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
