package runrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/safefs"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// RunStatus is where a run is.
type RunStatus string

const (
	RunRunning     RunStatus = "running"
	RunCompleted   RunStatus = "completed" // every task completed
	RunFailed      RunStatus = "failed"    // finished with a failed or skipped task
	RunAborted     RunStatus = "aborted"   // the model decided to abort after a failure
	RunInterrupted RunStatus = "interrupted"
	// RunPaused: a budget of the run was reached; no task was started after
	// it and the ones in flight finished. `planagent resume` with a larger
	// budget continues.
	RunPaused RunStatus = "paused"
)

// Finished reports whether a run needs no resume.
func (s RunStatus) Finished() bool {
	return s == RunCompleted || s == RunFailed || s == RunAborted
}

// Subagent is one sub-agent an attempt's agent started, and its tokens.
type Subagent struct {
	Attempt int             `json:"attempt"`
	ID      string          `json:"id"`
	Goal    string          `json:"goal"`
	Tokens  protocol.Tokens `json:"tokens"`
}

// TaskInfo is the per-task run record beyond the graph's status.
type TaskInfo struct {
	Attempt int `json:"attempt"` // attempt of the command last dispatched
	// Series is the current series of a task of several attempts run side
	// by side: its first attempt, how many it may have, the base they
	// start from (nil for a task of one attempt).
	Series       *Series         `json:"series,omitempty"`
	DispatchedAt time.Time       `json:"dispatched_at,omitzero"`
	Hints        []string        `json:"hints,omitempty"`
	Summary      string          `json:"summary,omitempty"`
	FilesChanged []string        `json:"files_changed,omitempty"`
	Tokens       protocol.Tokens `json:"tokens"`
	// Subagents are the sub-agents of every attempt, each with its part
	// of Tokens.
	Subagents []Subagent    `json:"subagents,omitempty"`
	Duration  time.Duration `json:"duration"`
	History   []string      `json:"history,omitempty"` // one line per finished attempt
	// Commit is the checkpoint of the completed task: its one commit on the
	// integration branch (see Checkpoints).
	Commit string `json:"commit,omitempty"`
	// Checkpoint is the integration state right after the task completed
	// (its own commit, or the state it found when it changed nothing), and
	// Merge its place in the order of completions: what rollback goes back to.
	Checkpoint string `json:"checkpoint,omitempty"`
	Merge      int    `json:"merge,omitempty"`
	// Base is the integration state the current attempt's copy was made from.
	Base string `json:"base,omitempty"`
	// Merging is the merged state the integration branch is being moved to:
	// set before the move, cleared after, so resume can finish a move a
	// crash cut short.
	Merging string `json:"merging,omitempty"`
	// Spans are the task's attempts on the wall clock, oldest first: the
	// timeline of the summary and the web view.
	Spans []Span `json:"spans,omitempty"`
	// Acceptance is what the completed task's acceptance commands printed
	// (each command, the tail of its output, its exit code), for review.
	Acceptance string `json:"acceptance,omitempty"`
	// Reason is the reason code of the attempt's last report (protocol's
	// ReasonBudget, ReasonModel), "" when it gave none.
	Reason string `json:"reason,omitempty"`
	// Results are the task's attempts one by one, oldest first: what
	// status --json, the summary and the web view show of each.
	Results []AttemptResult `json:"results,omitempty"`
}

// An attempt's statuses (AttemptResult.Status; docs/attempts.md). The
// orchestrator's attempts.Results alone changes them; the views read them.
const (
	AttemptRunning     = "running"     // dispatched: its copy made, its agent at work, its report in
	AttemptChecking    = "checking"    // side by side: squashed and checked on its own result
	AttemptHeld        = "held"        // side by side: passed its check, waits for the ranking
	AttemptPassed      = "passed"      // side by side: tried for the merge, or passing and not merged
	AttemptCompleted   = "completed"   // merged: the task's result
	AttemptFailed      = "failed"      // its report, check, acceptance or merge failed; or it died
	AttemptStopped     = "stopped"     // side by side: given up on while it ran or was checked
	AttemptInterrupted = "interrupted" // one at a time: ended through no fault of its own
)

// AttemptResult is one attempt of a task as it ended (docs/attempts.md).
type AttemptResult struct {
	Attempt int `json:"attempt"`
	// Status: running, then completed (merged), failed or interrupted;
	// side by side also checking, held, passed and stopped. The
	// orchestrator's attempts.Results alone changes it, through the
	// transitions its package comment draws.
	Status string `json:"status"`
	// Error is why it failed (its report, its acceptance, its merge).
	Error string `json:"error,omitempty"`
	// Hinted says the attempt was told why the one before failed.
	Hinted   bool            `json:"hinted,omitempty"`
	Tokens   protocol.Tokens `json:"tokens"`
	Duration time.Duration   `json:"duration"`
	// Rank is its place among the task's passing attempts (1: the one
	// merged); 0 when it did not pass.
	Rank int `json:"rank,omitempty"`
	// Picked says a person chose it (`planagent pick`) over the ranking's
	// winner: it is the one merged, rank 1.
	Picked bool `json:"picked,omitempty"`
	// Ref keeps the attempt's squashed result when it was not merged
	// (checkpoint.AttemptRef): planagent diff --attempt and pick read it.
	Ref string `json:"ref,omitempty"`
	// Acceptance is what its acceptance commands printed, each with its
	// exit code (absent: they did not run on it).
	Acceptance string `json:"acceptance,omitempty"`
	// EgressRefused is what the egress proxy turned away of this attempt
	// ("host:port: reason", the first few; docs/egress.md).
	EgressRefused []string `json:"egress_refused,omitempty"`
	// Summary is what its agent reported it did (a task of several
	// attempts side by side: each has its own, for its commit).
	Summary string `json:"summary,omitempty"`
	// JudgeReason is the LLM judge's reasoning when it picked this
	// attempt among tied ones (`judge: llm`).
	JudgeReason string `json:"judge_reason,omitempty"`
	// Candidate is what a task of several attempts ranks this attempt
	// by, once it passed its own check: held until the task's attempts
	// have ended, so a resume neither runs it again nor loses it.
	Candidate *Candidate `json:"candidate,omitempty"`
}

// Series is a task's attempts started side by side (docs/attempts.md).
type Series struct {
	From int    `json:"from"`
	Size int    `json:"size"`
	Base string `json:"base"`
	// FirstError is why its first attempt failed: the hint of the ones
	// told (next.EscalationHint).
	FirstError string `json:"first_error,omitempty"`
	// Reviewed: the LLM judge was asked about the tied best candidates
	// (`judge: llm`), once; Pick is the attempt it chose (0: its answer
	// was unusable, the deterministic order stands), Reason why.
	Reviewed bool   `json:"reviewed,omitempty"`
	Pick     int    `json:"pick,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Candidate is a passing attempt of a task of several attempts, as its
// check on its own squashed result found it.
type Candidate struct {
	Commit   string    `json:"commit"` // its squashed result, on Base
	Base     string    `json:"base"`
	Summary  string    `json:"summary,omitempty"`
	Passed   int       `json:"passed"` // acceptance commands passed, of Commands
	Commands int       `json:"commands"`
	Judged   bool      `json:"judged,omitempty"`
	JudgeOK  bool      `json:"judge_ok,omitempty"`
	Score    *float64  `json:"judge_score,omitempty"`
	Diff     int       `json:"diff_lines"`
	Finished time.Time `json:"finished"`
}

// Result is attempt n's result, added (running) when there is none yet.
func (in *TaskInfo) Result(n int) *AttemptResult {
	for i := range in.Results {
		if in.Results[i].Attempt == n {
			return &in.Results[i]
		}
	}
	in.Results = append(in.Results, AttemptResult{Attempt: n, Status: AttemptRunning})
	return &in.Results[len(in.Results)-1]
}

// Span is one attempt of a task from dispatch to its outcome.
type Span struct {
	Attempt int       `json:"attempt"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"`     // zero while the attempt runs
	Status  string    `json:"status,omitempty"` // completed | failed | interrupted; "" while running
}

// OpenSpan records the start of an attempt; one still open (its end was
// not recorded, e.g. a crash) ends here as interrupted.
func (in *TaskInfo) OpenSpan(attempt int, now time.Time) {
	if n := len(in.Spans); n > 0 && in.Spans[n-1].End.IsZero() {
		in.Spans[n-1].End, in.Spans[n-1].Status = now, "interrupted"
	}
	in.Spans = append(in.Spans, Span{Attempt: attempt, Start: now})
}

// OpenAttemptSpan starts attempt n's span beside the others still open:
// a task of several attempts runs them side by side.
func (in *TaskInfo) OpenAttemptSpan(n int, now time.Time) {
	in.Spans = append(in.Spans, Span{Attempt: n, Start: now})
}

// CloseAttemptSpan ends attempt n's span, if open, with its outcome.
func (in *TaskInfo) CloseAttemptSpan(n int, status string, now time.Time) {
	for i := range in.Spans {
		if s := &in.Spans[i]; s.Attempt == n && s.End.IsZero() {
			s.End, s.Status = now, status
		}
	}
}

// CloseSpan ends the running attempt, if any, with its outcome.
func (in *TaskInfo) CloseSpan(status string, now time.Time) {
	if n := len(in.Spans); n > 0 && in.Spans[n-1].End.IsZero() {
		in.Spans[n-1].End, in.Spans[n-1].Status, in.Spans[n-1].Attempt = now, status, in.Attempt
	}
}

// Checkpoints is where a run's checkpoints live: the user's git repository
// (mode "git": each completed task is one commit on Branch on top of Start)
// or a shadow repository under the volumes for a workspace that is not one
// (mode "shadow": GitDir, with the workspace as its work tree).
type Checkpoints struct {
	Mode   string `json:"mode"`              // git | shadow
	GitDir string `json:"git_dir,omitempty"` // absolute; the shadow repository's
	Branch string `json:"branch,omitempty"`  // the branch the run commits to ("" = detached HEAD)
	Start  string `json:"start"`             // the commit the run started from
	Head   string `json:"head"`              // the integration state: the last merged checkpoint
	Merges int    `json:"merges,omitempty"`  // completions so far (TaskInfo.Merge)
	// Rollback is a `planagent rollback` under way, saved before it
	// changes the workspace or the branch: the next rollback (or resume)
	// finishes it, whatever cut it short.
	Rollback *Rollback `json:"rollback,omitempty"`
}

// Rollback is the journal of a rollback (or a pick): the move from From
// (the branch when it began) to To, and what the run's state became once
// it is done.
// The tasks it makes pending again are in the state already when it is
// saved: only the move and Head are left to do.
type Rollback struct {
	From  string   `json:"from"`
	To    string   `json:"to"`
	Keep  int      `json:"keep"`            // the completions kept: Merges after it
	Task  string   `json:"task,omitempty"`  // the task gone back to; "" = the run's start
	Reset []string `json:"reset,omitempty"` // the tasks made pending again
	// Pick, when set, makes it the move of `planagent pick`: Task's commit
	// becomes that attempt's result (To), on the same parent, and nothing
	// is reset. The task's new commit and ranks are in the state already.
	Pick int `json:"pick,omitempty"`
}

// Decision is what was decided after a failure.
type Decision struct {
	Time   time.Time `json:"time"`
	Task   string    `json:"task"`
	Action string    `json:"action"` // retry | replan | continue | abort
	Reason string    `json:"reason,omitempty"`
	Hints  []string  `json:"hints,omitempty"`
}

// Settings are the options a run was started with that `planagent resume`
// must keep: resuming a `--runtime local --workspace ~/src/app` run under
// the defaults would dispatch its remaining tasks to a container working on
// another directory.
type Settings struct {
	Runtime     string        `json:"runtime,omitempty"`
	Workspace   string        `json:"workspace,omitempty"` // absolute
	Parallel    int           `json:"parallel,omitempty"`
	MaxRetries  int           `json:"max_retries"`
	TaskTimeout time.Duration `json:"task_timeout,omitempty"`
	// Image is the docker runtime's image: the project's toolchain, so a
	// resumed run's tasks and acceptance commands run where the first ones did.
	Image string `json:"image,omitempty"`
	// Model prices the run's tokens (status, runs, the summary, budgets).
	Model string `json:"model,omitempty"`
	// The run's budgets (0: none) and each task's default token budget.
	BudgetTokens     int           `json:"budget_tokens,omitempty"`
	BudgetTime       time.Duration `json:"budget_time,omitempty"`
	BudgetUSD        float64       `json:"budget_usd,omitempty"`
	TaskBudgetTokens int           `json:"task_budget_tokens,omitempty"`
	// The tasks' attempts (best-of-N): the default count, the policy,
	// first_pass_wins and the judge command; zero values in runs from
	// before attempts (one attempt per task).
	Attempts      int    `json:"attempts,omitempty"`
	AttemptPolicy string `json:"attempt_policy,omitempty"`
	FirstPassWins bool   `json:"first_pass_wins,omitempty"`
	Judge         string `json:"judge,omitempty"`
}

// State is a run's durable state: a snapshot (state.json) plus a journal
// of the transitions since (journal.jsonl); see journal.go.
type State struct {
	RunID     string               `json:"run_id"`
	Goal      string               `json:"goal"`
	Status    RunStatus            `json:"status"`
	Settings  *Settings            `json:"settings,omitempty"` // nil in states written before it existed
	Created   time.Time            `json:"created"`
	Updated   time.Time            `json:"updated"`
	Plan      *planspec.Plan       `json:"plan"`
	Tasks     []taskgraph.Task     `json:"tasks"`
	Info      map[string]*TaskInfo `json:"info"`
	Decisions []Decision           `json:"decisions,omitempty"`
	Usage     tokens.Usage         `json:"usage"` // planning and decisions
	// Elapsed is how long the run has been running, over every planagent
	// process that drove it (the time budget counts this, not the wall
	// clock, so a paused run does not use its time while it waits).
	Elapsed time.Duration `json:"elapsed,omitempty"`
	// Paused says which budget paused the run (status paused).
	Paused string `json:"paused,omitempty"`
	// Stop is why the run ended (nil while it runs, and in runs from
	// before stop reasons).
	Stop *Stop `json:"stop_reason,omitempty"`
	// ConfigError is the configuration error that paused the run, e.g. a
	// model server that returns tool calls as text; a resume clears it.
	ConfigError string `json:"config_error,omitempty"`
	// Checkpoints is nil for runs started before checkpoints existed.
	Checkpoints *Checkpoints `json:"checkpoints,omitempty"`
	// TraceParent is the W3C traceparent of the run span of the process
	// that started the run ("" without traces): a resume's run span is its
	// child, so the run stays one trace.
	TraceParent string `json:"traceparent,omitempty"`
	// JournalSeq is the last journal record this snapshot includes.
	JournalSeq int64 `json:"journal_seq,omitempty"`
	// Boundary is what the start-of-run probe found of the attempts'
	// boundary: "verified", "failed: …" or why it was not probed.
	Boundary string `json:"boundary,omitempty"`

	j *journal // the journal's bookkeeping; nil until first recorded or loaded
}

// NewState starts the state of a planned run.
func NewState(runID, goal string, p *planspec.Plan, usage tokens.Usage, now time.Time) (*State, error) {
	g, err := taskgraph.FromPlan(p)
	if err != nil {
		return nil, err
	}
	st := &State{RunID: runID, Goal: goal, Status: RunRunning, Created: now, Updated: now, Plan: p,
		Tasks: g.Tasks(), Info: map[string]*TaskInfo{}, Usage: usage}
	for _, t := range st.Tasks {
		st.Info[t.ID] = &TaskInfo{}
	}
	return st, nil
}

// NewRunID makes a sortable, unique run id.
func NewRunID(now time.Time) string {
	return fmt.Sprintf("run-%s-%04x", now.UTC().Format("20060102-150405"), now.UnixNano()&0xffff)
}

func statePath(l volume.Layout, runID string) string {
	return filepath.Join(l.Run(runID), "state.json")
}

// Save writes a snapshot of the whole state atomically and empties the
// journal it now includes. Transitions of single tasks go through Record.
func (s *State) Save(l volume.Layout, now time.Time) error {
	s.Updated = now
	s.indexTasks()
	s.JournalSeq = s.j.seq
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run state: %w", err)
	}
	root, err := volumesRoot(l)
	if err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	defer root.Close()
	if err := root.WriteFileAtomic(statePath(l, s.RunID), b, 0o644); err != nil {
		return fmt.Errorf("save run state: %w", err)
	}
	s.j.decisions = len(s.Decisions)
	return s.j.restart(l, s.RunID)
}

// volumesRoot opens the volumes for writing under runs/ without following a
// link: nothing there is the agents' to write, but the host side does not
// trust the volumes tree either. The volumes dir itself is the operator's,
// made if missing as before.
func volumesRoot(l volume.Layout) (*safefs.Root, error) {
	if err := os.MkdirAll(l.Root, 0o755); err != nil {
		return nil, fmt.Errorf("create the volumes dir: %w", err)
	}
	return safefs.OpenRoot(l.Root, nil)
}

// ErrNoRun means there is no run to show or resume.
var ErrNoRun = errors.New("no run found")

// LoadState reads a run's state. An empty runID means the latest run (the
// latest unfinished one when unfinished is set).
func LoadState(l volume.Layout, runID string, unfinished bool) (*State, error) {
	if runID == "" {
		id, err := latest(l, unfinished)
		if err != nil {
			return nil, err
		}
		runID = id
	}
	if err := protocol.ValidateID(runID); err != nil {
		return nil, fmt.Errorf("run id: %w", err)
	}
	b, err := protocol.ReadRegular(statePath(l, runID), 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no run %q (see `planagent runs`; a run started with --volumes DIR is found with the same --volumes DIR)", ErrNoRun, l.Runs(), runID)
	}
	if err != nil {
		return nil, fmt.Errorf("read run state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("run state %s is corrupt: %w", statePath(l, runID), err)
	}
	if st.RunID != runID || st.Created.IsZero() {
		// Junk a person or another tool left among the runs: shown as
		// such, not as a run with no id that started in the year 1.
		return nil, fmt.Errorf("%s is not a planagent run state (its run_id is %q, its created time %q): remove %s", statePath(l, runID), st.RunID, st.Created.Format(time.RFC3339), l.Run(runID))
	}
	if st.Info == nil {
		st.Info = map[string]*TaskInfo{}
	}
	if err := st.replayJournal(l); err != nil {
		return nil, err
	}
	for _, t := range st.Tasks {
		if st.Info[t.ID] == nil {
			st.Info[t.ID] = &TaskInfo{}
		}
	}
	return &st, nil
}

func latest(l volume.Layout, unfinished bool) (string, error) {
	entries, err := os.ReadDir(l.Runs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && protocol.ValidateID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	for _, id := range ids {
		st, err := LoadState(l, id, false)
		if errors.Is(err, ErrNoRun) {
			continue // a directory without a state: not a run
		}
		if err != nil {
			// Skipping it would show or resume an older run without a word.
			return "", fmt.Errorf("%w (name the run to use another: see %s)", err, l.Runs())
		}
		if unfinished && st.Status.Finished() {
			continue
		}
		return id, nil
	}
	what := "runs"
	if unfinished {
		what = "unfinished runs"
	}
	return "", fmt.Errorf("%w: no %s under %s (start one with `planagent run GOAL`, or name the volumes they are in with --volumes DIR)", ErrNoRun, what, l.Runs())
}

// AddTasks appends new pending tasks to the run (a review's follow-ups); a
// finished run becomes resumable again. The graph with them must validate
// (known dependencies, no duplicate id, no cycle); else nothing changes.
func (s *State) AddTasks(ts []taskgraph.Task) error {
	all := append(append([]taskgraph.Task(nil), s.Tasks...), ts...)
	for i := len(s.Tasks); i < len(all); i++ {
		all[i].Status = taskgraph.Pending
	}
	if _, err := taskgraph.New(all); err != nil {
		return fmt.Errorf("add tasks: %w", err)
	}
	s.Tasks = all
	for _, t := range ts {
		s.Info[t.ID] = &TaskInfo{}
	}
	if s.Status.Finished() || s.Status == RunPaused {
		s.Status, s.Stop = RunInterrupted, nil
	}
	return nil
}

// RetryFailed puts the run's failed tasks back to pending, with the tasks
// skipped because of them, each with its retries anew; a finished run
// becomes resumable. It returns the tasks put back.
func (s *State) RetryFailed() ([]string, error) {
	g, err := taskgraph.New(s.Tasks)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, t := range g.Tasks() {
		if t.Status == taskgraph.Failed {
			ids = append(ids, t.ID)
		}
	}
	retried := map[string]bool{}
	for _, id := range ids {
		if err := g.Retry(id); err != nil {
			return nil, err
		}
		retried[id] = true
	}
	tasks := g.Tasks()
	for i := range tasks {
		if retried[tasks[i].ID] {
			tasks[i].Granted = tasks[i].Attempts
		}
	}
	if len(ids) > 0 {
		s.Tasks = tasks
		if s.Status.Finished() || s.Status == RunPaused {
			s.Status, s.Stop = RunInterrupted, nil
		}
	}
	return ids, nil
}

// AgentTokens is every token the run's agents have reported so far.
func (s *State) AgentTokens() protocol.Tokens {
	var t protocol.Tokens
	for _, in := range s.Info {
		t.Add(in.Tokens)
	}
	return t
}
