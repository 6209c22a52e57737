package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// dispatchReady sends ready tasks until Parallel are in flight.
func (r *run) dispatchReady() error {
	for _, id := range r.g.Ready() {
		if len(r.inflight) >= r.o.opts.Parallel {
			return nil
		}
		if err := r.dispatch(id); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) dispatch(id string) error {
	if err := r.g.Start(id); err != nil {
		return err
	}
	t, _ := r.g.Get(id)
	info := r.info(id)
	info.Attempt = t.Attempts
	info.DispatchedAt = r.o.opts.Now()
	// Persist before acting: a crash after this line re-sends the command on resume.
	if err := r.save(); err != nil {
		return err
	}
	var deps []taskgraph.Task
	for _, d := range t.Dependencies {
		dt, _ := r.g.Get(d)
		deps = append(deps, dt)
	}
	if err := r.ctxm.WriteTaskContext(t, deps, info.History); err != nil {
		return err
	}
	if err := r.writeCommand(t, info); err != nil {
		return err
	}
	r.inflight[id] = &flight{attempt: info.Attempt, deadline: r.o.opts.Now().Add(r.o.opts.TaskTimeout)}
	r.o.opts.Events.Emit(events.Event{Type: events.TaskStart, RunID: r.st.RunID, TaskID: id,
		Text: fmt.Sprintf("%s %s (attempt %d)", r.position(id), titleOf(t), info.Attempt),
		Data: map[string]any{"attempt": info.Attempt, "title": titleOf(t)}})
	return nil
}

// writeCommand archives what an earlier attempt left in reports/ and writes
// the command file (atomically, so the watcher sees it complete).
func (r *run) writeCommand(t taskgraph.Task, info *TaskInfo) error {
	l := r.o.opts.Layout
	archive, attempt := r.archiveOf(t.ID, info.Attempt-1)
	if err := os.MkdirAll(archive, 0o755); err != nil {
		return fmt.Errorf("archive reports: %w", err)
	}
	for _, p := range []string{l.ReportFile(t.ID), l.EventsFile(t.ID)} {
		if exists(p) {
			dst := filepath.Join(archive, fmt.Sprintf("%s.attempt-%d%s", t.ID, attempt, strings.TrimPrefix(filepath.Base(p), t.ID)))
			if err := os.Rename(p, dst); err != nil {
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
	if t.Error != "" && info.Attempt > 1 {
		hints = append(hints, "The previous attempt failed: "+oneLine(t.Error, 1000))
	}
	cmd := &protocol.Command{
		ID: t.ID, RunID: r.st.RunID, Attempt: info.Attempt, Title: titleOf(t),
		Dependencies: deps, Hints: hints, Acceptance: t.Acceptance,
		Timeout: protocol.Duration(r.o.opts.TaskTimeout), Body: t.Description,
	}
	if err := protocol.WriteCommand(l.CommandFile(t.ID), cmd); err != nil {
		return fmt.Errorf("send task %s: %w", t.ID, err)
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
		if fi, err := os.Stat(l.Run(rep.RunID)); err == nil && fi.IsDir() {
			return filepath.Join(l.Run(rep.RunID), "reports"), rep.Attempt
		}
	}
	return own, rep.Attempt
}

// collect handles every report that has arrived for an in-flight task. It
// scans rather than trusting single events, so nothing is missed after an
// overflow or while planagent was down.
func (r *run) collect(ctx context.Context) error {
	l := r.o.opts.Layout
	for id, f := range r.inflight {
		p := l.ReportFile(id)
		if !exists(p) {
			continue
		}
		rep, err := protocol.ReadReport(p)
		if err != nil {
			delete(r.inflight, id)
			if err := r.failed(ctx, id, fmt.Sprintf("unreadable report: %v", err)); err != nil {
				return err
			}
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
		r.info(id).Attempt = rep.Attempt
		delete(r.inflight, id)
		if err := r.handleReport(ctx, id, rep); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) handleReport(ctx context.Context, id string, rep *protocol.Report) error {
	info := r.info(id)
	info.Summary = rep.Summary
	info.FilesChanged = rep.FilesChanged
	info.Tokens.Prompt += rep.Tokens.Prompt
	info.Tokens.Completion += rep.Tokens.Completion
	info.Duration += time.Duration(rep.Duration)
	switch rep.Status {
	case protocol.StatusCompleted:
		if msg := r.accept(ctx, id); msg != "" {
			return r.failed(ctx, id, msg)
		}
		info.History = append(info.History, fmt.Sprintf("attempt %d: completed: %s", rep.Attempt, oneLine(rep.Summary, 300)))
		if err := r.g.Complete(id, oneLine(rep.Summary, 500)); err != nil {
			return err
		}
		r.end(id, "completed")
		if err := r.save(); err != nil {
			return err
		}
		return r.afterReport(id)
	case protocol.StatusInterrupted:
		// The watcher was stopped mid-task: nothing is wrong with the task, so
		// it goes again without asking the model (bounded by the attempt cap).
		info.History = append(info.History, fmt.Sprintf("attempt %d: interrupted", rep.Attempt))
		t, _ := r.g.Get(id)
		if t.Attempts <= r.o.opts.MaxRetries+3 {
			if err := r.g.Fail(id, "interrupted"); err != nil {
				return err
			}
			if err := r.g.Retry(id); err != nil {
				return err
			}
			return r.save()
		}
		return r.failed(ctx, id, "interrupted too many times")
	default:
		msg := rep.Error
		if msg == "" {
			msg = rep.Summary
		}
		return r.failed(ctx, id, "the agent reported failure: "+msg)
	}
}

// accept runs the task's acceptance commands in the runtime; "" means all passed.
func (r *run) accept(ctx context.Context, id string) string {
	t, _ := r.g.Get(id)
	for _, c := range t.Acceptance {
		res, err := r.o.opts.Runtime.Exec(ctx, c, r.o.opts.AcceptTime)
		if err != nil {
			return fmt.Sprintf("acceptance command %q could not run: %v", c, err)
		}
		if res.ExitCode != 0 {
			return fmt.Sprintf("acceptance command %q exited %d: %s", c, res.ExitCode, tail(res.Output, 1500))
		}
	}
	return ""
}

// failed records a failure and applies the decision about it.
func (r *run) failed(ctx context.Context, id, reason string) error {
	info := r.info(id)
	info.History = append(info.History, fmt.Sprintf("attempt %d: failed: %s", info.Attempt, oneLine(reason, 300)))
	if err := r.g.Fail(id, reason); err != nil {
		return err
	}
	r.issues = append(r.issues, fmt.Sprintf("%s failed: %s", id, oneLine(reason, 200)))
	r.end(id, "failed")
	if err := r.save(); err != nil {
		return err
	}
	t, _ := r.g.Get(id)
	left := r.o.opts.MaxRetries + 1 - t.Attempts
	v := r.decide(ctx, Failure{Task: t, Error: reason, PlanSummary: r.g.Summary(), AttemptsLeft: left})
	r.st.Usage.Add(v.Usage)
	switch v.Action {
	case "retry":
		if left <= 0 {
			v.Action, v.Reason = "continue", "retries exhausted (--max-retries); "+v.Reason
			break
		}
		if err := r.g.Retry(id); err != nil {
			return err
		}
		info.Hints = v.Hints
	case "replan":
		tasks, err := replanTasks(r.g, v.Replan)
		if err == nil {
			err = r.g.Replace(tasks)
		}
		if err != nil {
			v.Action, v.Reason = "continue", fmt.Sprintf("replan rejected (%v); continuing without %s", err, id)
			break
		}
		for _, nt := range r.g.Tasks() {
			r.info(nt.ID)
		}
	case "abort":
		r.aborted = true
	default:
		v.Action = "continue"
	}
	d := Decision{Time: r.o.opts.Now(), Task: id, Action: v.Action, Reason: v.Reason, Hints: v.Hints}
	r.st.Decisions = append(r.st.Decisions, d)
	r.o.opts.Events.Emit(events.Event{Type: events.Decision, RunID: r.st.RunID, TaskID: id, Status: v.Action,
		Text: v.Reason, Data: map[string]any{"hints": v.Hints, "invalid": v.Invalid}})
	if err := r.save(); err != nil {
		return err
	}
	return r.afterReport(id)
}

func (r *run) decide(ctx context.Context, f Failure) Verdict {
	if r.o.opts.Decider == nil {
		if f.AttemptsLeft > 0 {
			return Verdict{Action: "retry", Reason: "attempts left"}
		}
		return Verdict{Action: "continue", Reason: "retries exhausted"}
	}
	return r.o.opts.Decider.Decide(ctx, f)
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
	elapsed := r.o.opts.Now().Sub(info.DispatchedAt).Round(100 * time.Millisecond)
	text := fmt.Sprintf("%s %s … %s, %s", r.position(id), titleOf(t), status, elapsed)
	if status != "completed" && t.Error != "" {
		text += ": " + oneLine(t.Error, 200)
	}
	r.o.opts.Events.Emit(events.Event{Type: events.TaskEnd, RunID: r.st.RunID, TaskID: id, Status: status, Text: text,
		Usage: &events.Usage{Prompt: info.Tokens.Prompt, Completion: info.Tokens.Completion},
		Data:  map[string]any{"attempt": info.Attempt, "elapsed_ms": elapsed.Milliseconds(), "summary": info.Summary}})
}

// position is "[i/N]" of id in the topological order.
func (r *run) position(id string) string {
	order := r.g.Order()
	for i, o := range order {
		if o == id {
			return fmt.Sprintf("[%d/%d]", i+1, len(order))
		}
	}
	return "[?]"
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
	file, err := os.Open(name)
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

func titleOf(t taskgraph.Task) string {
	if t.Title != "" {
		return t.Title
	}
	return oneLine(t.Description, 80)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

var errNoReplan = errors.New("the replan has no tasks")
