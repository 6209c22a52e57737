// Package runview is the one read model of a run that `planagent status
// --json`, `runs`, `graph`, the summary and the web view all render: the
// tasks in topological order with status, attempts, tokens, cost and time,
// and the run's totals. It is built from the orchestrator's durable state
// and does no I/O beyond reading it.
package runview

import (
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"

	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Price is what a model costs, in USD per million tokens: uncached
// prompt tokens (Input), completion tokens, prompt tokens read from the
// provider's cache and written to it.
type Price struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CachedInput float64 `json:"cached_input"`
	CacheWrite  float64 `json:"cache_write"`
}

// Cost prices t. Prompt counts the cached and cache-written tokens too (as
// OpenAI reports them), so they are taken out of it before the input
// price applies: no token is billed twice.
func (p Price) Cost(t Tokens) float64 {
	uncached := max(t.Prompt-t.Cached-t.CacheWrite, 0)
	return (float64(uncached)*p.Input + float64(t.Cached)*p.CachedInput +
		float64(t.CacheWrite)*p.CacheWrite + float64(t.Completion)*p.Output) / 1e6
}

// Prices maps a model name to its price.
type Prices map[string]Price

// Cost is what t cost under model, and false when that is unknown. The
// server's own figure, when it sent one, is the cost: it knows its prices
// and discounts. Tokens of calls whose server sent none (a run that mixes
// servers) are then not priced on top: the figure is the server's.
func (p Prices) Cost(model string, t Tokens) (float64, bool) {
	if t.ServerCostUSD > 0 {
		return t.ServerCostUSD, true
	}
	pr, ok := p[model]
	if !ok {
		return 0, false
	}
	return pr.Cost(t), true
}

// Tokens are prompt and completion tokens with their sum; Cached and
// CacheWrite are the prompt tokens (inside Prompt) read from and written
// to the provider's cache, ServerCostUSD what the server said they cost.
type Tokens struct {
	Prompt        int     `json:"prompt"`
	Completion    int     `json:"completion"`
	Total         int     `json:"total"`
	Cached        int     `json:"cached,omitempty"`
	CacheWrite    int     `json:"cache_write,omitempty"`
	ServerCostUSD float64 `json:"server_cost_usd,omitempty"`
}

// TokensOf is a report's tokens as the views count them.
func TokensOf(t protocol.Tokens) Tokens {
	return Tokens{Prompt: t.Prompt, Completion: t.Completion, Total: t.Prompt + t.Completion,
		Cached: t.Cached, CacheWrite: t.CacheWrite, ServerCostUSD: t.CostUSD}
}

func usageTokens(u tokens.Usage) Tokens {
	return TokensOf(protocol.Tokens{Prompt: u.Prompt, Completion: u.Completion, Cached: u.Cached, CacheWrite: u.CacheWrite, CostUSD: u.CostUSD})
}

func (t Tokens) plus(o Tokens) Tokens {
	return Tokens{Prompt: t.Prompt + o.Prompt, Completion: t.Completion + o.Completion, Total: t.Total + o.Total,
		Cached: t.Cached + o.Cached, CacheWrite: t.CacheWrite + o.CacheWrite, ServerCostUSD: t.ServerCostUSD + o.ServerCostUSD}
}

// Run is a run as every view shows it.
type Run struct {
	ID      string    `json:"id"`
	Goal    string    `json:"goal"`
	Title   string    `json:"title,omitempty"`
	Status  string    `json:"status"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Model   string    `json:"model,omitempty"`
	Tasks   []Task    `json:"tasks"` // topological order
	// Counts is the number of tasks per status (pending, in_progress,
	// interrupted, completed, failed, skipped), every status present even
	// when 0.
	Counts        map[string]int `json:"counts"`
	Tokens        Tokens         `json:"tokens"` // agents, planner and decisions
	AgentTokens   Tokens         `json:"agent_tokens"`
	PlannerTokens Tokens         `json:"planner_tokens"` // planning and decisions
	// CostUSD is the sum of the tasks' and the planner's costs; nil when
	// a part that used tokens has neither a price nor a server-reported cost.
	CostUSD   *float64 `json:"cost_usd,omitempty"`
	AgentMS   int64    `json:"agent_ms"` // the agents' own time, summed over attempts
	WallMS    int64    `json:"wall_ms"`
	ElapsedMS int64    `json:"elapsed_ms"` // running time over every run/resume (what budget_time counts)
	// Budget is the run's budgets (omitted without any); Paused says which
	// one paused it.
	Budget *Budget `json:"budget,omitempty"`
	Paused string  `json:"paused,omitempty"`
	// Stop is why the run ended (omitted while it runs).
	Stop      *runrecord.Stop `json:"stop_reason,omitempty"`
	Decisions []Decision      `json:"decisions,omitempty"`
	// Boundary is what the run's start-of-run probe found (docs/egress.md).
	Boundary string `json:"boundary,omitempty"`
}

// Budget is what a run may use (0: no limit).
type Budget struct {
	Tokens     int     `json:"tokens,omitempty"`
	TimeMS     int64   `json:"time_ms,omitempty"`
	USD        float64 `json:"usd,omitempty"`
	TaskTokens int     `json:"task_tokens,omitempty"`
}

// Task is one task of a run.
type Task struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Status is the task graph's status, except that a task in progress
	// when its run stopped (Ctrl-C, a failure, a pause) is "interrupted":
	// nothing works on it any more, and resume starts it again.
	Status       string   `json:"status"`
	Dependencies []string `json:"dependencies"`
	Attempts     int      `json:"attempts"`
	Tokens       Tokens   `json:"tokens"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	// Subagents are the sub-agents of the task's attempts, each with its
	// part of Tokens and CostUSD.
	Subagents  []Subagent `json:"subagents,omitempty"`
	DurationMS int64      `json:"duration_ms"` // the agent's time over all attempts
	// ElapsedMS is dispatch to end summed over the attempts (copy, agent,
	// acceptance and merge): what the progress line's "completed in" says.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Started is the first attempt's dispatch, Ended the last attempt's end;
	// nil when not (yet) there.
	Started      *time.Time `json:"started,omitempty"`
	Ended        *time.Time `json:"ended,omitempty"`
	Result       string     `json:"result,omitempty"`
	Error        string     `json:"error,omitempty"`
	SkippedBy    string     `json:"skipped_by,omitempty"`
	FilesChanged []string   `json:"files_changed,omitempty"`
	Commit       string     `json:"commit,omitempty"`
	Timeline     []Span     `json:"timeline"`
	// AttemptResults are the task's attempts one by one: how each ended,
	// why, its rank among the passing ones (1: merged), tokens, cost and
	// the agent's time (docs/attempts.md).
	AttemptResults []AttemptResult `json:"attempt_results,omitempty"`
	// Level is the task's depth in the graph (0: no dependencies), for layout.
	Level int `json:"level"`
}

// AttemptResult is one attempt of a task.
type AttemptResult struct {
	Attempt int `json:"attempt"`
	// Status: running | completed | failed | interrupted; for a task of
	// several attempts side by side also checking (its own acceptance
	// commands run), held (passed, waiting for the others), passed
	// (passed, not merged) and stopped (another won, or the budget).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Hinted bool   `json:"hinted,omitempty"` // told why the previous one failed
	Rank   int    `json:"rank,omitempty"`   // 1: merged; 0: did not pass
	// Ref keeps the squashed result of an attempt not merged
	// (refs/codeagent/<run>/<task>/attempt-N): git diff, pick and
	// planagent diff --attempt read it.
	Ref string `json:"ref,omitempty"`
	// Acceptance: what its acceptance commands printed, each with its
	// exit code.
	Acceptance string   `json:"acceptance,omitempty"`
	Tokens     Tokens   `json:"tokens"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	// EgressRefused: what the egress proxy turned away of this attempt.
	EgressRefused []string `json:"egress_refused,omitempty"`
	// DiffLines and JudgeScore: what a passing attempt of a task of
	// several was ranked by (lines added plus removed; the last number
	// its judge command printed); JudgeReason: why the LLM judge picked it.
	DiffLines   *int     `json:"diff_lines,omitempty"`
	JudgeScore  *float64 `json:"judge_score,omitempty"`
	JudgeReason string   `json:"judge_reason,omitempty"`
}

// Subagent is one sub-agent of a task's attempt: its tokens are counted in
// the task's too.
type Subagent struct {
	ID      string   `json:"id"`
	Attempt int      `json:"attempt"`
	Goal    string   `json:"goal"`
	Tokens  Tokens   `json:"tokens"`
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// Span is one attempt of a task.
type Span struct {
	Attempt int        `json:"attempt"`
	Start   time.Time  `json:"start"`
	End     *time.Time `json:"end,omitempty"` // nil while running
	Status  string     `json:"status"`        // running | completed | failed | interrupted; passed (side by side, not merged)
}

// StatusInterrupted is the status of a task, or of an attempt, that was in
// progress when its run stopped. The run record keeps such a task in
// progress (that is how resume knows to start it again); the views say
// what a reader needs: no agent works on it now.
const StatusInterrupted = "interrupted"

// stopped reports whether st's run is not being driven: then nothing of it
// is running, whatever its tasks' status in the record.
func stopped(st *runrecord.State) bool {
	return st.Status != runrecord.RunRunning
}

// Decision is what was decided after a failure.
type Decision struct {
	Time   time.Time `json:"time"`
	Task   string    `json:"task"`
	Action string    `json:"action"`
	Reason string    `json:"reason,omitempty"`
}

// Options say how to price a run.
type Options struct {
	Prices Prices
	// Model prices runs whose state does not name their model (older runs).
	Model string
}

// Build makes the view of st.
func Build(st *runrecord.State, opts Options) *Run {
	r := &Run{ID: st.RunID, Goal: st.Goal, Status: string(st.Status), Created: st.Created, Updated: st.Updated,
		Model: opts.Model, Boundary: st.Boundary, Counts: map[string]int{}}
	if st.Settings != nil && st.Settings.Model != "" {
		r.Model = st.Settings.Model
	}
	if s := st.Settings; s != nil && (s.BudgetTokens > 0 || s.BudgetTime > 0 || s.BudgetUSD > 0 || s.TaskBudgetTokens > 0) {
		r.Budget = &Budget{Tokens: s.BudgetTokens, TimeMS: s.BudgetTime.Milliseconds(), USD: s.BudgetUSD, TaskTokens: s.TaskBudgetTokens}
	}
	r.Paused, r.ElapsedMS, r.Stop = st.Paused, st.Elapsed.Milliseconds(), st.Stop
	if st.Plan != nil {
		r.Title = st.Plan.Title
	}
	for _, s := range statusOrder {
		r.Counts[s] = 0
	}
	var agentTime time.Duration
	levels := levelsOf(st.Tasks)
	for _, t := range ordered(st.Tasks) {
		in := st.Info[t.ID]
		if in == nil {
			in = &runrecord.TaskInfo{}
		}
		v := Task{ID: t.ID, Title: titleOf(t), Status: string(t.Status), Dependencies: append([]string{}, t.Dependencies...),
			Attempts: t.Attempts, Tokens: TokensOf(in.Tokens), DurationMS: in.Duration.Milliseconds(),
			Result: t.Result, Error: t.Error, SkippedBy: t.SkippedBy, FilesChanged: in.FilesChanged, Commit: in.Commit,
			Timeline: timeline(st, t, in), Level: levels[t.ID]}
		if t.Status == taskgraph.Completed {
			v.Error = ""
		}
		if t.Status == taskgraph.InProgress && stopped(st) {
			v.Status = StatusInterrupted
		}
		if c, ok := opts.Prices.Cost(r.Model, v.Tokens); ok {
			v.CostUSD = &c
		}
		for _, s := range in.Subagents {
			sv := Subagent{ID: s.ID, Attempt: s.Attempt, Goal: s.Goal, Tokens: TokensOf(s.Tokens)}
			if c, ok := opts.Prices.Cost(r.Model, sv.Tokens); ok {
				sv.CostUSD = &c
			}
			v.Subagents = append(v.Subagents, sv)
		}
		for _, a := range in.Results {
			av := AttemptResult{Attempt: a.Attempt, Status: a.Status, Error: a.Error, Hinted: a.Hinted, Rank: a.Rank, Ref: a.Ref, Acceptance: a.Acceptance,
				Tokens: TokensOf(a.Tokens), DurationMS: a.Duration.Milliseconds(), EgressRefused: a.EgressRefused, JudgeReason: a.JudgeReason}
			if c := a.Candidate; c != nil {
				d := c.Diff
				av.DiffLines, av.JudgeScore = &d, c.Score
			}
			if av.Status == runrecord.AttemptRunning && stopped(st) {
				av.Status = StatusInterrupted
			}
			if c, ok := opts.Prices.Cost(r.Model, av.Tokens); ok {
				av.CostUSD = &c
			}
			v.AttemptResults = append(v.AttemptResults, av)
		}
		if n := len(v.Timeline); n > 0 {
			v.Started = &v.Timeline[0].Start
			v.Ended = v.Timeline[n-1].End
		}
		for _, s := range v.Timeline {
			if s.End != nil {
				v.ElapsedMS += s.End.Sub(s.Start).Round(time.Millisecond).Milliseconds()
			}
		}
		r.Counts[v.Status]++
		r.AgentTokens = r.AgentTokens.plus(v.Tokens)
		agentTime += in.Duration
		r.Tasks = append(r.Tasks, v)
	}
	r.PlannerTokens = usageTokens(st.Usage)
	r.Tokens = r.AgentTokens.plus(r.PlannerTokens)
	// The run's cost is the sum of its parts, each priced by the rules
	// (a task whose server reported a cost, another priced by the
	// config): pricing the summed tokens would drop one or the other.
	total, priced := 0.0, true
	parts := make([]Tokens, 0, len(r.Tasks)+1)
	parts = append(parts, r.PlannerTokens)
	for _, t := range r.Tasks {
		parts = append(parts, t.Tokens)
	}
	for _, t := range parts {
		c, ok := opts.Prices.Cost(r.Model, t)
		if !ok && t.Total > 0 {
			priced = false
			break
		}
		total += c
	}
	if priced {
		if _, ok := opts.Prices[r.Model]; ok || total > 0 {
			r.CostUSD = &total
		}
	}
	r.AgentMS = agentTime.Milliseconds()
	r.WallMS = st.Updated.Sub(st.Created).Milliseconds()
	for _, d := range st.Decisions {
		r.Decisions = append(r.Decisions, Decision{Time: d.Time, Task: d.Task, Action: d.Action, Reason: d.Reason})
	}
	return r
}

// timeline is the task's attempts. A state written before spans were kept
// gives its last dispatch and the agent's time as one approximate span. An
// attempt still open in a stopped run's record ended when the run last
// wrote it, interrupted: its clock must not keep running in the views.
func timeline(st *runrecord.State, t taskgraph.Task, in *runrecord.TaskInfo) []Span {
	spans := []Span{}
	for _, s := range in.Spans {
		v := Span{Attempt: s.Attempt, Start: s.Start, Status: s.Status}
		if !s.End.IsZero() {
			end := s.End
			v.End = &end
		}
		if v.Status == "" {
			v.Status = "running"
		}
		spans = append(spans, stopSpan(st, v))
	}
	if len(spans) > 0 || in.DispatchedAt.IsZero() {
		return spans
	}
	v := Span{Attempt: max(in.Attempt, 1), Start: in.DispatchedAt, Status: "running"}
	if t.Status != taskgraph.InProgress {
		end := in.DispatchedAt.Add(in.Duration)
		v.End, v.Status = &end, string(t.Status)
	}
	return append(spans, stopSpan(st, v))
}

// stopSpan ends an open span of a stopped run at the run's last update.
func stopSpan(st *runrecord.State, v Span) Span {
	if v.End != nil || !stopped(st) {
		return v
	}
	end := st.Updated
	if end.Before(v.Start) {
		end = v.Start
	}
	v.End, v.Status = &end, StatusInterrupted
	return v
}

// ordered is the tasks in topological order; a graph that does not validate
// (a corrupt state) keeps the plan order so it can still be looked at.
func ordered(tasks []taskgraph.Task) []taskgraph.Task {
	g, err := taskgraph.New(tasks)
	if err != nil {
		return tasks
	}
	out := make([]taskgraph.Task, 0, len(tasks))
	for _, id := range g.Order() {
		t, _ := g.Get(id)
		out = append(out, t)
	}
	return out
}

// levelsOf is each task's longest distance from a task without dependencies.
func levelsOf(tasks []taskgraph.Task) map[string]int {
	deps := make(map[string][]string, len(tasks))
	for _, t := range tasks {
		deps[t.ID] = t.Dependencies
	}
	level := make(map[string]int, len(tasks))
	visiting := map[string]bool{}
	var walk func(id string) int
	walk = func(id string) int {
		if l, ok := level[id]; ok {
			return l
		}
		if visiting[id] { // a cycle in a corrupt state: stop here
			return 0
		}
		visiting[id] = true
		l := 0
		for _, d := range deps[id] {
			if _, known := deps[d]; known {
				l = max(l, walk(d)+1)
			}
		}
		level[id] = l
		return l
	}
	for _, t := range tasks {
		walk(t.ID)
	}
	return level
}

func titleOf(t taskgraph.Task) string {
	if t.Title != "" {
		return t.Title
	}
	line, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
	return events.Title(line, 80)
}
