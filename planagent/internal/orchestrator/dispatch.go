package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator/next"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// dispatch starts the next attempts of tasks ids: the state of each first,
// synced before anything acts on it. With checkpoints their copies of the
// workspace are then made together, off the loop: a copy is most of what
// a task costs the loop, and the loop meanwhile merges and moves the
// workspace for the tasks that finished. EvCopied brings them back to be
// launched (ActLaunch); without checkpoints they are launched at once.
func (r *run) dispatch(ctx context.Context, ids ...string) error {
	type copyJob struct {
		dir, base string
		attempt   int
	}
	jobs := make([]copyJob, len(ids))
	keys := make([]string, len(ids))
	for i, id := range ids {
		info, n, err := r.prepare(ctx, id)
		if err != nil {
			return err
		}
		base := info.Base
		if info.Series != nil && r.several(id) {
			base = info.Series.Base // escalated attempts start from the first one's base
		}
		jobs[i] = copyJob{dir: r.o.opts.Layout.Attempt(r.st.RunID, id, n), base: base, attempt: n}
		keys[i] = r.key(id, n)
	}
	if !r.isolated() {
		return r.launchAll(ctx, keys...)
	}
	r.underway.copyStarted(len(ids))
	r.copies.Go(func() {
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() { errs[i] = r.work.makeCopy(ctx, id, jobs[i].attempt, jobs[i].dir, jobs[i].base) })
		}
		wg.Wait()
		r.send(next.EvCopied{IDs: keys, Err: errors.Join(errs...)})
	})
	return nil
}

// launchAll sends the dispatched attempts of tasks ids, one task after the
// other: the task context and the command file; then the runtime launches
// them all at once. A container takes most of a second to create and start
// (more on a busy machine): launched one after the other, the last of
// --parallel N tasks would wait N-1 launch times before it began.
func (r *run) launchAll(ctx context.Context, keys ...string) error {
	type launching struct {
		id, key string
		n       int
	}
	var ls []launching
	for _, key := range keys {
		id, n := r.attemptOf(key)
		if r.series.IsStopped(id, n) {
			r.dropAttemptCopy(id, n) // another attempt won while its copy was made
			continue
		}
		if err := r.sendCommand(id, n, key); err != nil {
			return err
		}
		ls = append(ls, launching{id, key, n})
	}
	if len(ls) == 1 {
		if err := r.launch(ctx, ls[0].id, ls[0].n, ls[0].key); err != nil {
			return err
		}
	} else {
		// Every launch is waited for, failed or not: the runtime follows
		// each container it started, and Stop removes them at the run's end.
		errs := make([]error, len(ls))
		var wg sync.WaitGroup
		for i, l := range ls {
			wg.Go(func() { errs[i] = r.launch(ctx, l.id, l.n, l.key) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	for _, l := range ls {
		t, _ := r.g.Get(l.id)
		r.o.opts.Events.Emit(events.Event{Type: events.TaskStart, RunID: r.st.RunID, TaskID: l.id,
			Text: fmt.Sprintf("%s %s (attempt %d)", r.position(l.id), titleOf(t), l.n),
			Data: map[string]any{"attempt": l.n, "title": titleOf(t)}})
	}
	return nil
}

// prepare records the next attempt of task id as started, and returns
// its number. A task of several attempts already in progress starts
// another beside those under way.
func (r *run) prepare(ctx context.Context, id string) (*runrecord.TaskInfo, int, error) {
	start, fresh, several := r.g.Start, true, r.several(id)
	if t, _ := r.g.Get(id); t.Status == taskgraph.InProgress && several {
		start, fresh = r.g.StartAnother, false
	}
	if err := start(id); err != nil {
		return nil, 0, err
	}
	t, _ := r.g.Get(id)
	info := r.info(id)
	n := t.Attempts
	info.Attempt = n
	at, err := r.attempts.Dispatched(id, n, several)
	if err != nil {
		return nil, 0, err
	}
	info.DispatchedAt = at
	if several {
		// A fresh dispatch (the task was pending) begins its series.
		if fresh {
			r.series.Begin(id, info, n, bestOf(t, r.o.opts.Attempts), r.st.Checkpoints.Head)
		}
		if err := r.series.Started(id, n); err != nil {
			return nil, 0, err
		}
	}
	r.traces.start(ctx, r.key(id, n), id, n)
	if r.isolated() {
		info.Base = r.st.Checkpoints.Head
	}
	// Persist before acting: a crash after this line re-sends the command
	// (its copy made again) on resume.
	if err := r.record(id); err != nil {
		return nil, 0, err
	}
	if err := r.st.Sync(); err != nil {
		return nil, 0, err
	}
	return info, n, nil
}

// sendCommand writes the task context and the command of attempt n of
// task id, which is in flight from then on under key.
func (r *run) sendCommand(id string, n int, key string) error {
	t, _ := r.g.Get(id)
	info := r.info(id)
	var deps []taskgraph.Task
	for _, d := range t.Dependencies {
		dt, _ := r.g.Get(d)
		deps = append(deps, dt)
	}
	if err := r.ctxm.WriteTaskContext(t, deps, info.History); err != nil {
		return err
	}
	// The clock is read before the command goes out: what answers it at
	// once answers after its launch time.
	f := r.newFlight(id, n)
	if err := r.writeCommand(t, info, n, key); err != nil {
		return err
	}
	r.underway.launched(key, f)
	return nil
}

// writeCommand archives what an earlier attempt left in reports/ and writes
// the command file (atomically, so the watcher sees it complete).
func (r *run) writeCommand(t taskgraph.Task, info *runrecord.TaskInfo, n int, key string) error {
	l := r.o.opts.Layout
	archive, archived := r.archiveOf(key, n-1)
	if err := r.root.MkdirAll(archive); err != nil {
		return fmt.Errorf("archive reports: %w", err)
	}
	for _, p := range []string{l.ReportFile(key), l.EventsFile(key)} {
		if exists(p) {
			dst := filepath.Join(archive, fmt.Sprintf("%s.attempt-%d%s", t.ID, archived, strings.TrimPrefix(filepath.Base(p), key)))
			if err := r.root.Rename(p, dst); err != nil {
				return fmt.Errorf("archive %s: %w", p, err)
			}
		}
	}
	var deps []protocol.Dependency
	for _, d := range t.Dependencies {
		dt, _ := r.g.Get(d)
		deps = append(deps, protocol.Dependency{ID: d, Summary: oneLine(dt.Result, 500)})
	}
	hints := append([]string(nil), info.Hints...)
	// A task of several attempts tells only every other one why the last
	// failed (next.EscalationHint): the others start unanchored.
	switch s := info.Series; {
	case s != nil && r.several(t.ID):
		// Side by side, the series' attempts are told why its first failed.
		if s.FirstError != "" && n > s.From && next.EscalationHint(n-s.From+1) {
			hints = append(hints, "The previous attempt failed: "+oneLine(s.FirstError, 1000))
			if err := r.attempts.Hinted(t.ID, n); err != nil {
				return err
			}
		}
		// A series after a retry starts as any retry does: told why the
		// task failed.
		if n == s.From && n > 1 && t.Error != "" {
			hints = append(hints, "The previous attempt failed: "+oneLine(t.Error, 1000))
			if err := r.attempts.Hinted(t.ID, n); err != nil {
				return err
			}
		}
	case t.Error != "" && n > 1 && (bestOf(t, r.o.opts.Attempts) <= 1 || next.EscalationHint(n)):
		hints = append(hints, "The previous attempt failed: "+oneLine(t.Error, 1000))
		if err := r.attempts.Hinted(t.ID, n); err != nil {
			return err
		}
	}
	cmd := &protocol.Command{
		ID: t.ID, RunID: r.st.RunID, Attempt: n, Title: titleOf(t),
		Dependencies: deps, Hints: hints, Acceptance: t.Acceptance,
		Timeout: protocol.Duration(r.o.opts.TaskTimeout), Body: t.Description, TraceParent: r.traces.parent(key),
		Setup: r.o.opts.SetupCommand,
	}
	if r.isolated() {
		cmd.Workspace = l.AttemptRel(r.st.RunID, t.ID, n)
	}
	cmd.BudgetTokens = r.taskBudget(t.ID)
	// Counted at the gateway from before any agent can read the command.
	r.gate.opened(attempt.Name(t.ID, n), cmd.BudgetTokens)
	if err := protocol.WriteCommand(l.CommandFile(key), cmd); err != nil {
		return fmt.Errorf("send task %s: %w", t.ID, err)
	}
	return nil
}

// taskBudget is task id's token budget per attempt: the plan's for the
// task, else the run's task_budget_tokens (0: none).
func (r *run) taskBudget(id string) int {
	if t, _ := r.g.Get(id); t.BudgetTokens > 0 {
		return t.BudgetTokens
	}
	return r.o.opts.Budget.TaskTokens
}

// launch asks the runtime to carry out the attempt whose command is written.
func (r *run) launch(ctx context.Context, id string, n int, key string) error {
	l := r.o.opts.Layout
	a := attempt.Attempt{RunID: r.st.RunID, TaskID: id, Attempt: n, Dir: l.Workspace()}
	if key != id {
		a.Stem = key
	}
	if r.isolated() {
		a.Dir, a.Rel = l.Attempt(r.st.RunID, id, n), l.AttemptRel(r.st.RunID, id, n)
	}
	if err := r.o.opts.Runtime.Launch(ctx, a); err != nil {
		return fmt.Errorf("start task %s: %w", id, err)
	}
	return nil
}

// archiveOf is where the report of task id left in reports/ is archived,
// and under which attempt: with the run and attempt it names, so the report
// of an earlier run on these volumes is filed with that run; an unreadable
// one counts as the previous attempt of this run.
func (r *run) archiveOf(id string, previous int) (string, int) {
	l := r.o.opts.Layout
	own := filepath.Join(l.Run(r.st.RunID), "reports")
	rep, err := protocol.ReadReport(l.ReportFile(id))
	if err != nil {
		return own, previous
	}
	if rep.RunID != r.st.RunID {
		if m, err := r.root.Mode(l.Run(rep.RunID)); err == nil && m.IsDir() {
			return filepath.Join(l.Run(rep.RunID), "reports"), rep.Attempt
		}
	}
	return own, rep.Attempt
}

// afterReport updates the project context and archives a finished task's context.
func (r *run) afterReport(id string) error {
	if err := r.ctxm.UpdateProject(r.g, r.issues); err != nil {
		return err
	}
	if t, _ := r.g.Get(id); t.Status == taskgraph.Completed {
		return r.ctxm.CleanupTask(id)
	}
	return nil
}

func (r *run) end(id, status string) {
	t, _ := r.g.Get(id)
	info := r.info(id)
	r.attempts.Closed(id, status)
	r.traces.end(id, status)
	elapsed := r.o.opts.Now().Sub(info.DispatchedAt).Round(time.Millisecond) // elapsed_ms and the text agree
	// " — ", not " … ": a title cut with "…" must not run into the status.
	text := fmt.Sprintf("%s %s — %s in %s", r.position(id), titleOf(t), status, protocol.FormatDuration(elapsed))
	if status != "completed" && t.Error != "" {
		text += ": " + oneLine(t.Error, 200)
	}
	r.o.opts.Events.Emit(events.Event{Type: events.TaskEnd, RunID: r.st.RunID, TaskID: id, Status: status, Text: text,
		Usage: &events.Usage{Prompt: info.Tokens.Prompt, Completion: info.Tokens.Completion, Cached: info.Tokens.Cached,
			CacheWrite: info.Tokens.CacheWrite, CostUSD: info.Tokens.CostUSD},
		Data: map[string]any{"attempt": info.Attempt, "elapsed_ms": elapsed.Milliseconds(), "summary": info.Summary}})
}

// position is "[i/N]" of id in the topological order.
func (r *run) position(id string) string {
	if i, n := r.g.Position(id); i > 0 {
		return fmt.Sprintf("[%d/%d]", i, n)
	}
	return "[?]"
}

func titleOf(t taskgraph.Task) string {
	if t.Title != "" {
		return t.Title
	}
	return events.Title(t.Description, 72) // git's subject line length
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

var errNoReplan = errors.New("the replan has no tasks")

func (r *run) info(id string) *runrecord.TaskInfo {
	in := r.st.Info[id]
	if in == nil {
		in = &runrecord.TaskInfo{}
		r.st.Info[id] = in
	}
	return in
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return events.Shorten(s, n)
}
