package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The observer turns what it sees (report files, the clock, heartbeats, the
// runtime) into events; next decides what they mean: a stale report, an
// attempt past its deadline, a silent watcher, which tasks an agent's
// death takes with it.

// adoptInProgress makes in-progress tasks of a resumed run in-flight again
// and tells next what of each attempt is on disk: next decides whether it
// waits, is launched again, or gets its command (and copy) again first.
func (r *run) adoptInProgress(ctx context.Context) error {
	var evs []event
	for _, t := range r.g.Tasks() {
		if t.Status != taskgraph.InProgress {
			continue
		}
		if r.several(t.ID) && r.info(t.ID).Series != nil {
			sevs, err := r.adoptSeries(ctx, t.ID)
			if err != nil {
				return err
			}
			evs = append(evs, sevs...)
			continue
		}
		r.underway.launched(t.ID, r.newFlight(t.ID, r.info(t.ID).Attempt))
		evs = append(evs, r.onDisk(t.ID))
	}
	return r.handle(ctx, evs)
}

// adoptSeries takes up the series of a task of several attempts as the
// record left it: its held candidates stay held (not run again), one
// tried for the merge and not merged is held again, a check cut short is
// made again, and each running attempt is waited for under its own key.
func (r *run) adoptSeries(ctx context.Context, id string) ([]event, error) {
	info := r.info(id)
	var live []int
	for _, res := range info.Results {
		if res.Attempt >= info.Series.From && (res.Status == runrecord.AttemptChecking || res.Status == runrecord.AttemptRunning) {
			live = append(live, res.Attempt)
		}
	}
	if err := r.series.Resumed(id, live...); err != nil {
		return nil, err
	}
	var evs []event
	for _, res := range info.Results {
		if res.Attempt < info.Series.From {
			continue
		}
		switch res.Status {
		case runrecord.AttemptPassed:
			if res.Candidate != nil && info.Merging == "" {
				if err := r.attempts.Retaken(id, res.Attempt); err != nil {
					return nil, err
				}
			}
		case runrecord.AttemptChecking:
			if err := r.startCheck(ctx, id, res.Attempt); err != nil {
				return nil, err
			}
		case runrecord.AttemptRunning:
			key := protocol.Stem(id, res.Attempt)
			r.underway.launched(key, r.newFlight(id, res.Attempt))
			evs = append(evs, r.onDisk(key))
		}
	}
	return evs, nil
}

// onDisk is what of attempt key's files a resumed run finds. A live
// watcher moves an attempt along command, claim, report while this looks:
// looking in that order sees it in at least one place wherever it is
// between two looks, where another order could miss it (claim looked at
// before it is made, command after it is gone) and send it again.
func (r *run) onDisk(key string) next.EvResumedInFlight {
	l := r.o.opts.Layout
	ev := next.EvResumedInFlight{ID: key}
	ev.Command = exists(l.CommandFile(key))
	ev.Claim = exists(l.ClaimFile(key))
	ev.Report = exists(l.ReportFile(key))
	return ev
}

// resend writes a resumed attempt's command again, its copy made again
// first.
func (r *run) resend(ctx context.Context, a next.ActResend) error {
	id, n := r.attemptOf(a.ID)
	t, _ := r.g.Get(id)
	info := r.info(id)
	if r.isolated() {
		base := info.Base
		if info.Series != nil && a.ID != id {
			base = info.Series.Base
		}
		if err := r.work.makeCopy(ctx, id, n, r.o.opts.Layout.Attempt(r.st.RunID, id, n), base); err != nil {
			return err
		}
	}
	return r.writeCommand(t, info, n, a.ID)
}

// collect returns an event for every report that has arrived for an
// in-flight task, stale or not: next tells. It scans rather than trusting
// single fsnotify events, so nothing is missed after an overflow or while
// planagent was down.
func (r *run) collect() []event {
	l := r.o.opts.Layout
	var out []event
	for _, key := range r.underway.keys() {
		p := l.ReportFile(key)
		if !exists(p) {
			continue
		}
		id := r.underway.flight(key).ID
		rep, err := protocol.ReadReport(p)
		if err != nil {
			ev := next.EvBadReport{ID: id, Err: err}
			if key != id {
				ev.Key = key
			}
			out = append(out, ev)
			continue
		}
		out = append(out, reported{ID: id, Key: key, Report: rep})
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
	ev := next.EvAgentDied{TaskID: ex.TaskID, Attempt: ex.Attempt, Cause: ex.Err, Env: envfault.Is(ex.Err)}
	for _, id := range r.underway.keys() {
		if exists(r.o.opts.Layout.ReportFile(id)) {
			ev.Reported = append(ev.Reported, id)
		}
	}
	return ev
}

// progress shows what a running task is doing, from its events file.
func (r *run) progress(name string) {
	base := filepath.Base(name)
	key, ok := strings.CutSuffix(base, ".events.jsonl")
	if !ok {
		return
	}
	f := r.underway.flight(key)
	if f == nil {
		return
	}
	id := f.ID
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
