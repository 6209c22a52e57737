// Package runview is the one read model of a run that `planagent status
// --json`, `runs`, `graph`, the summary and the web view all render: the
// tasks in topological order with status, attempts, tokens, cost and time,
// and the run's totals. It is built from the orchestrator's durable state
// and does no I/O beyond reading it.
package runview

import (
	"time"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Prices maps a model name to its price.
type Prices map[string]Price

// Cost is the price of t under model, and false when the model has no price.
func (p Prices) Cost(model string, t Tokens) (float64, bool) {
	pr, ok := p[model]
	if !ok {
		return 0, false
	}
	return (float64(t.Prompt)*pr.Input + float64(t.Completion)*pr.Output) / 1e6, true
}

// Tokens are prompt and completion tokens with their sum.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
	Total      int `json:"total"`
}

func tokens(prompt, completion int) Tokens {
	return Tokens{Prompt: prompt, Completion: completion, Total: prompt + completion}
}

func (t Tokens) plus(o Tokens) Tokens {
	return tokens(t.Prompt+o.Prompt, t.Completion+o.Completion)
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
	// completed, failed, skipped), every status present even when 0.
	Counts        map[string]int `json:"counts"`
	Tokens        Tokens         `json:"tokens"` // agents, planner and decisions
	AgentTokens   Tokens         `json:"agent_tokens"`
	PlannerTokens Tokens         `json:"planner_tokens"` // planning and decisions
	// CostUSD is nil when the model has no price in the config.
	CostUSD   *float64 `json:"cost_usd,omitempty"`
	AgentMS   int64    `json:"agent_ms"` // the agents' own time, summed over attempts
	WallMS    int64    `json:"wall_ms"`
	ElapsedMS int64    `json:"elapsed_ms"` // running time over every run/resume (what budget_time counts)
	// Budget is the run's budgets (omitted without any); Paused says which
	// one paused it.
	Budget *Budget `json:"budget,omitempty"`
	Paused string  `json:"paused,omitempty"`
	// Stop is why the run ended (omitted while it runs).
	Stop      *orchestrator.Stop `json:"stop_reason,omitempty"`
	Decisions []Decision         `json:"decisions,omitempty"`
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
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Status       string   `json:"status"`
	Dependencies []string `json:"dependencies"`
	Attempts     int      `json:"attempts"`
	Tokens       Tokens   `json:"tokens"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	DurationMS   int64    `json:"duration_ms"` // the agent's time over all attempts
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
	// Level is the task's depth in the graph (0: no dependencies), for layout.
	Level int `json:"level"`
}

// Span is one attempt of a task.
type Span struct {
	Attempt int        `json:"attempt"`
	Start   time.Time  `json:"start"`
	End     *time.Time `json:"end,omitempty"` // nil while running
	Status  string     `json:"status"`        // running | completed | failed | interrupted
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
func Build(st *orchestrator.State, opts Options) *Run {
	r := &Run{ID: st.RunID, Goal: st.Goal, Status: string(st.Status), Created: st.Created, Updated: st.Updated,
		Model: opts.Model, Counts: map[string]int{}}
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
	for _, s := range []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress, taskgraph.Completed, taskgraph.Failed, taskgraph.Skipped} {
		r.Counts[string(s)] = 0
	}
	var agentTime time.Duration
	levels := levelsOf(st.Tasks)
	for _, t := range ordered(st.Tasks) {
		in := st.Info[t.ID]
		if in == nil {
			in = &orchestrator.TaskInfo{}
		}
		v := Task{ID: t.ID, Title: titleOf(t), Status: string(t.Status), Dependencies: append([]string{}, t.Dependencies...),
			Attempts: t.Attempts, Tokens: tokens(in.Tokens.Prompt, in.Tokens.Completion), DurationMS: in.Duration.Milliseconds(),
			Result: t.Result, Error: t.Error, SkippedBy: t.SkippedBy, FilesChanged: in.FilesChanged, Commit: in.Commit,
			Timeline: timeline(t, in), Level: levels[t.ID]}
		if t.Status == taskgraph.Completed {
			v.Error = ""
		}
		if c, ok := opts.Prices.Cost(r.Model, v.Tokens); ok {
			v.CostUSD = &c
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
	r.PlannerTokens = tokens(st.Usage.Prompt, st.Usage.Completion)
	r.Tokens = r.AgentTokens.plus(r.PlannerTokens)
	if c, ok := opts.Prices.Cost(r.Model, r.Tokens); ok {
		r.CostUSD = &c
	}
	r.AgentMS = agentTime.Milliseconds()
	r.WallMS = st.Updated.Sub(st.Created).Milliseconds()
	for _, d := range st.Decisions {
		r.Decisions = append(r.Decisions, Decision{Time: d.Time, Task: d.Task, Action: d.Action, Reason: d.Reason})
	}
	return r
}

// timeline is the task's attempts. A state written before spans were kept
// gives its last dispatch and the agent's time as one approximate span.
func timeline(t taskgraph.Task, in *orchestrator.TaskInfo) []Span {
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
		spans = append(spans, v)
	}
	if len(spans) > 0 || in.DispatchedAt.IsZero() {
		return spans
	}
	v := Span{Attempt: max(in.Attempt, 1), Start: in.DispatchedAt, Status: "running"}
	if t.Status != taskgraph.InProgress {
		end := in.DispatchedAt.Add(in.Duration)
		v.End, v.Status = &end, string(t.Status)
	}
	return append(spans, v)
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
	return firstLine(t.Description, 80)
}
