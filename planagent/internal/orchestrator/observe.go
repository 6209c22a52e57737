package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The observer turns what it sees (report files, the clock, heartbeats, the
// runtime) into events. A task it reports on stops being in flight.

// adoptInProgress makes in-progress tasks of a resumed run in-flight again.
func (r *run) adoptInProgress(ctx context.Context) error {
	l := r.o.opts.Layout
	for _, t := range r.g.Tasks() {
		if t.Status != taskgraph.InProgress {
			continue
		}
		info := r.info(t.ID)
		now := r.o.opts.Now()
		r.inflight[t.ID] = &flight{attempt: info.Attempt, launched: now, deadline: now.Add(r.o.opts.TaskTimeout)}
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
// in-flight task. It scans rather than trusting single fsnotify events, so
// nothing is missed after an overflow or while planagent was down.
func (r *run) collect() []event {
	l := r.o.opts.Layout
	var out []event
	for _, id := range slices.Sorted(maps.Keys(r.inflight)) {
		f := r.inflight[id]
		p := l.ReportFile(id)
		if !exists(p) {
			continue
		}
		rep, err := protocol.ReadReport(p)
		if err != nil {
			delete(r.inflight, id)
			out = append(out, evBadReport{ID: id, Err: err})
			continue
		}
		// A watcher that retakes the command of a dead one bumps the attempt,
		// so a later attempt of this run is the answer; an earlier one is stale.
		if rep.RunID != r.st.RunID || rep.Attempt < f.attempt {
			if !f.warned {
				r.o.opts.Logger.Warn("ignoring a stale report", "file", p, "run", rep.RunID, "attempt", rep.Attempt, "want_attempt", f.attempt)
				f.warned = true
			}
			continue
		}
		delete(r.inflight, id)
		out = append(out, evReport{ID: id, Report: rep})
	}
	return out
}

// timeouts returns an event for every in-flight task past its deadline,
// once what worked on it is stopped: it must not write into a copy that is
// about to be thrown away (and recycled for another attempt).
func (r *run) timeouts(ctx context.Context) []event {
	now := r.o.opts.Now()
	var out []event
	for _, id := range slices.Sorted(maps.Keys(r.inflight)) {
		if f := r.inflight[id]; now.After(f.deadline) {
			delete(r.inflight, id)
			r.abandoned[id] = true
			if err := r.o.opts.Runtime.Abandon(ctx, id); err != nil {
				r.o.opts.Logger.Warn("stop the timed-out attempt", "task", id, "err", err)
			}
			out = append(out, evTimedOut{ID: id})
		}
	}
	return out
}

// checkHeartbeat takes a watcher whose heartbeat went stale while tasks are
// in flight for dead. Exited does not cover that: a compose watcher that
// planagent did not start, or a frozen process, never reports there. What the
// runtime started is stopped first, so a frozen watcher cannot come back and
// run the re-dispatched tasks a second time.
//
// Only a task launched at least maxAge ago counts: the container of one just
// launched (or a watcher just started) may not have beaten yet, and the
// previous attempt's container took its heartbeat away when it exited.
func (r *run) checkHeartbeat(ctx context.Context) []event {
	dir, maxAge := r.o.opts.Layout.Watchers(), r.o.opts.HeartbeatTimeout
	since := r.o.opts.Now().Add(-maxAge)
	waited := false
	for _, f := range r.inflight {
		if !f.launched.After(since) {
			waited = true
			break
		}
	}
	if !waited || runtime.Alive(dir, maxAge) {
		return nil
	}
	if err := r.o.opts.Runtime.Stop(context.WithoutCancel(ctx)); err != nil {
		r.o.opts.Logger.Warn("stop the silent coding agent", "err", err)
	}
	return r.agentDied(runtime.Exit{Err: fmt.Errorf("no watcher heartbeat in %s for %s", dir, maxAge)})
}

// agentDied stops waiting for the in-flight tasks whose agent died: the
// one attempt named, or every task of the shared watcher. Those that
// reported before dying are collected as usual; the others' claims are
// freed so their next attempt's command is taken afresh.
func (r *run) agentDied(ex runtime.Exit) []event {
	l := r.o.opts.Layout
	ev := evAgentDied{Cause: ex.Err, Shared: ex.TaskID == ""}
	for _, id := range slices.Sorted(maps.Keys(r.inflight)) {
		f := r.inflight[id]
		if ex.TaskID != "" && id != ex.TaskID {
			continue
		}
		if ex.Attempt != 0 && f.attempt != ex.Attempt {
			// An earlier attempt's agent, found dead once the next was
			// dispatched (its report already archived): the next one lives.
			r.o.opts.Logger.Info("an earlier attempt's agent ended", "task", id, "attempt", ex.Attempt, "err", ex.Err)
			continue
		}
		for _, p := range []string{l.ClaimFile(id), l.OwnerFile(id)} {
			_ = os.Remove(p)
		}
		if exists(l.ReportFile(id)) {
			continue // it finished before dying
		}
		delete(r.inflight, id)
		ev.IDs = append(ev.IDs, id)
	}
	if len(ev.IDs) == 0 && !ev.Shared {
		return nil
	}
	return []event{ev}
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
