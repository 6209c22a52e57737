package orchestrator

import (
	"fmt"
	"sync"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// Meter is the model gateway as the budgets see it: what the provider
// billed each attempt (named attempt.Name), and a check it makes before it
// forwards a request. With a Meter the agents' tokens are the gateway's
// count, and a report's own figures change nothing.
type Meter interface {
	// Usage is what was billed for the requests of the attempt named;
	// ok is false when the gateway issued that name no token (the
	// attempt is served by a shared watcher: its report's figures count).
	Usage(name string) (used protocol.Tokens, ok bool)
	// SetAdmit sets the check; a non-nil error refuses the request with
	// its text. It is called on the gateway's goroutines.
	SetAdmit(func(name string) error)
}

// Where a request is refused past a budget.
const (
	refusedTask = "task"
	refusedRun  = "run"
)

// refusal is a request the gateway refused past a budget.
type refusal struct {
	kind string // refusedTask or refusedRun
	text string
}

// gate is what the gateway's check reads while the loop runs: the loop
// owns the run, so what the check needs of it is copied here, under mu.
type gate struct {
	meter  Meter
	budget Budget

	mu sync.Mutex
	// booked: the agents' booked tokens and the planner's and the
	// decider's, as of the loop's last event.
	booked protocol.Tokens
	// open: the attempts launched and not yet booked, with their task's
	// token budget (0: none).
	open    map[string]int
	refused map[string]refusal
}

// admit refuses a request of attempt name once its task's token budget or
// the run's budget is spent; the text names the budget and how to go on.
func (g *gate) admit(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	limit, open := g.open[name]
	if !open {
		// Not an attempt this run launched: a shared watcher's token (the
		// local runtime), whose tokens its reports book.
		return nil
	}
	if f, ok := g.refused[name]; ok {
		return fmt.Errorf("%s", f.text)
	}
	own, _ := g.meter.Usage(name)
	if limit > 0 && own.Prompt+own.Completion > limit {
		text := fmt.Sprintf("budget: attempt %s used %d tokens, past its task's budget of %d tokens (task_budget_tokens or the plan's budget_tokens); "+
			"the task stops here and the decision step may retry or split it", name, own.Prompt+own.Completion, limit)
		g.refused[name] = refusal{refusedTask, text}
		return fmt.Errorf("%s", text)
	}
	used := g.booked
	for n := range g.open {
		u, _ := g.meter.Usage(n)
		used.Add(u)
	}
	// Tokens and cost only: the time budget lets the attempts in flight
	// finish, as it always has (elapsed 0 never reaches it).
	if hit := g.budget.exceeded(used, 0); hit.text != "" {
		text := hit.text + ": the run pauses; continue with planagent resume and a larger budget (" + resumeFlag(hit.reason) + ")"
		g.refused[name] = refusal{refusedRun, text}
		return fmt.Errorf("%s", text)
	}
	return nil
}

// resumeFlag is the flag of resume that raises the budget reason names.
func resumeFlag(reason string) string {
	switch reason {
	case runrecord.StopBudgetUSD:
		return "--budget-usd"
	}
	return "--budget-tokens"
}

// meterOn starts counting at the gateway, when the run has one.
func (r *run) meterOn() {
	if r.o.opts.Meter == nil {
		return
	}
	r.gate = &gate{meter: r.o.opts.Meter, budget: r.o.opts.Budget, open: map[string]int{}, refused: map[string]refusal{}}
	r.gate.sync(r.spent.booked())
	r.o.opts.Meter.SetAdmit(r.gate.admit)
}

// The loop's side of the gate. A nil *gate is a run without a gateway:
// it counts nothing, and the reports' figures are booked.

// sync copies the run's booked tokens to the gate.
func (g *gate) sync(booked protocol.Tokens) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.booked = booked
	g.mu.Unlock()
}

// opened notes attempt name, which the gateway counts, with its task's
// token budget, before its command goes out.
func (g *gate) opened(name string, taskBudget int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.open[name] = taskBudget
	g.mu.Unlock()
}

// openUsage is what the gateway counted for the attempts not yet booked.
func (g *gate) openUsage() protocol.Tokens {
	var used protocol.Tokens
	if g == nil {
		return used
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for n := range g.open {
		u, _ := g.meter.Usage(n)
		used.Add(u)
	}
	return used
}

// take is what the gateway counted for attempt name, taken off the open
// attempts (booked once), with the refusal the gateway answered it with,
// if any. ok is false when the gateway does not count that attempt (or
// there is none): the report's figures stand.
func (g *gate) take(name string) (used protocol.Tokens, refused *refusal, ok bool) {
	if g == nil {
		return used, nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, open := g.open[name]; !open {
		return used, nil, false
	}
	delete(g.open, name)
	used, ok = g.meter.Usage(name)
	if f, was := g.refused[name]; was {
		refused = &f
	}
	return used, refused, ok
}

// bookUnreported books what the gateway counted for task id's attempt in
// flight that ends without a report (timed out, its agent died, given
// up): spent all the same.
func (r *run) bookUnreported(id string) {
	r.bookUnreportedAttempt(id, r.info(id).Attempt)
}

// bookUnreportedAttempt books what the gateway counted of attempt n of
// task id, which ended without a report (one of several side by side).
func (r *run) bookUnreportedAttempt(id string, n int) {
	info := r.info(id)
	r.noteEgress(id, n)
	used, _, ok := r.gate.take(attempt.Name(id, n))
	if !ok {
		return
	}
	info.Tokens.Add(used)
	if r.several(id) {
		r.attempts.Used(id, n, used)
	}
	r.spent.agentUsed(used)
	r.gate.sync(r.spent.booked())
	r.traces.usage(r.key(id, n), used)
}

// meterReport replaces what a report says it used with the gateway's
// count, and a report of an attempt the gateway refused past a budget with
// what that refusal means, whatever the agent claims: past its task's
// budget the task failed as a task stopped at its budget; past the run's
// the attempt goes back to pending and the run pauses.
func (r *run) meterReport(id string, rep *protocol.Report) {
	if rep.RunID != r.st.RunID {
		return // an earlier run's, dropped as stale: its attempt is not this one
	}
	used, refused, ok := r.gate.take(attempt.Name(id, rep.Attempt))
	if !ok {
		return
	}
	if rep.Tokens != used {
		r.o.opts.Logger.Debug("the report's tokens are not the gateway's count; the count is booked",
			"task", id, "reported", rep.Tokens, "counted", used)
	}
	// The subagents' figures stay the report's breakdown: they are in
	// their attempt's count (one token serves the attempt), never added.
	rep.Tokens = used
	r.traces.usage(r.key(id, rep.Attempt), used)
	if refused == nil {
		return
	}
	switch refused.kind {
	case refusedTask:
		rep.Status, rep.Reason, rep.Error = protocol.StatusFailed, protocol.ReasonBudget, refused.text
	case refusedRun:
		rep.Status, rep.Reason, rep.Error = protocol.StatusInterrupted, "", refused.text
	}
}
