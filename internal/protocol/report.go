package protocol

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/clip"
)

// Status is how an attempt ended.
type Status string

// The statuses a report may carry.
const (
	StatusCompleted   Status = "completed"
	StatusFailed      Status = "failed"
	StatusInterrupted Status = "interrupted"
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusInterrupted
}

// Tokens counts what an attempt cost.
type Tokens struct {
	Prompt     int `yaml:"prompt"`
	Completion int `yaml:"completion"`
	// Cached and CacheWrite are the prompt tokens (counted in Prompt) read
	// from and written to the provider's cache; CostUSD is the cost the
	// server itself reported (OpenRouter, LiteLLM), 0 when it sent none.
	Cached     int     `yaml:"cached,omitempty" json:",omitempty"`
	CacheWrite int     `yaml:"cache_write,omitempty" json:",omitempty"`
	CostUSD    float64 `yaml:"cost_usd,omitempty" json:",omitempty"`
}

// Add sums o into t.
func (t *Tokens) Add(o Tokens) {
	t.Prompt += o.Prompt
	t.Completion += o.Completion
	t.Cached += o.Cached
	t.CacheWrite += o.CacheWrite
	t.CostUSD += o.CostUSD
}

// Subagent is one sub-agent of an attempt (the task tool) and what it used.
type Subagent struct {
	ID     string `yaml:"id"`   // <task>.sub<n>
	Goal   string `yaml:"goal"` // what the lead agent asked of it
	Tokens Tokens `yaml:"tokens"`
}

// Report is codingagent's answer to one command, written to reports/<id>.md.
// ReasonBudget is the Reason of a task stopped at its token budget.
const ReasonBudget = "budget"

// ReasonModel is the Reason of a task that failed on the model provider's
// error (after the client's retries): not the task's fault.
const ReasonModel = "model"

// ReasonConfig is the Reason of a task the server's configuration made
// impossible (it returned a tool call as text): the run stops, exit 2.
const ReasonConfig = "config"

// ReasonSetup is the Reason of an attempt whose setup command failed:
// the agent never started.
const ReasonSetup = "setup"

type Report struct {
	ID           string   `yaml:"id"`
	RunID        string   `yaml:"run_id"`
	Attempt      int      `yaml:"attempt"`
	Status       Status   `yaml:"status"`
	Summary      string   `yaml:"summary"`
	FilesChanged []string `yaml:"files_changed"`
	Tokens       Tokens   `yaml:"tokens"`
	Duration     Duration `yaml:"duration"`
	Error        string   `yaml:"error,omitempty"`
	// Reason classifies a failure for the planner: "budget" when the task
	// passed its token budget; "" otherwise.
	Reason string `yaml:"reason,omitempty"`
	// Subagents are the sub-agents the task's agent started, each with
	// what it used; their tokens are also counted in Tokens.
	Subagents []Subagent `yaml:"subagents,omitempty"`
	Body      string     `yaml:"-"` // details (markdown)
}

// ParseReport parses a report file; name as for ParseCommand.
func ParseReport(name string, data []byte) (*Report, error) {
	r, err := parseReport(name, data)
	return r, withFile(name, err)
}

func parseReport(name string, data []byte) (*Report, error) {
	header, body, err := splitFile(data)
	if err != nil {
		return nil, err
	}
	root, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	r := &Report{Body: body}
	var status string
	err = decodeFields("", root, []field{
		{"id", stringField(&r.ID)},
		{"run_id", stringField(&r.RunID)},
		{"attempt", intField(&r.Attempt)},
		{"status", stringField(&status)},
		{"summary", stringField(&r.Summary)},
		{"files_changed", stringListField(&r.FilesChanged)},
		{"tokens", tokensField(&r.Tokens)},
		{"duration", durationField(&r.Duration)},
		{"error", stringField(&r.Error)},
		{"reason", stringField(&r.Reason)},
		{"subagents", subagentsField(&r.Subagents)},
	})
	if err != nil {
		return nil, err
	}
	r.Status = Status(status)
	r.FilesChanged = nilIfEmpty(r.FilesChanged)
	if err := r.validate(name); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Report) validate(name string) error {
	if err := validateIDs(name, r.ID, r.RunID, r.Attempt); err != nil {
		return err
	}
	if !r.Status.Valid() {
		got := "missing"
		if r.Status != "" {
			got = fmt.Sprintf("%q", r.Status)
		}
		return &ParseError{Field: "status", Problem: fmt.Sprintf("%s: must be %s, %s or %s",
			got, StatusCompleted, StatusFailed, StatusInterrupted)}
	}
	if r.Tokens.Prompt < 0 {
		return &ParseError{Field: "tokens.prompt", Problem: "must be >= 0"}
	}
	if r.Tokens.Completion < 0 {
		return &ParseError{Field: "tokens.completion", Problem: "must be >= 0"}
	}
	if !r.Tokens.valid() {
		return &ParseError{Field: "tokens", Problem: "cached, cache_write and cost_usd must be >= 0"}
	}
	for i, s := range r.Subagents {
		if s.ID == "" {
			return &ParseError{Field: fmt.Sprintf("subagents[%d].id", i), Problem: "missing"}
		}
		if !s.Tokens.valid() || s.Tokens.Prompt < 0 || s.Tokens.Completion < 0 {
			return &ParseError{Field: fmt.Sprintf("subagents[%d].tokens", i), Problem: "every count must be >= 0"}
		}
	}
	if r.Duration < 0 {
		return &ParseError{Field: "duration", Problem: fmt.Sprintf("must not be negative, got %s", r.Duration)}
	}
	return nil
}

// header lays out the front matter; every field but error is always written
// so a reader sees at a glance what a report holds.
func (r *Report) header() mapping {
	m := newMapping()
	m.str("id", r.ID)
	m.str("run_id", r.RunID)
	m.integer("attempt", r.Attempt)
	m.str("status", string(r.Status))
	m.str("summary", r.Summary)
	m.list("files_changed", r.FilesChanged)
	m.add("tokens", r.Tokens.node())
	m.duration("duration", r.Duration)
	if r.Error != "" {
		m.str("error", r.Error)
	}
	if r.Reason != "" {
		m.str("reason", r.Reason)
	}
	if len(r.Subagents) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range r.Subagents {
			sm := newMapping()
			sm.str("id", s.ID)
			sm.str("goal", s.Goal)
			sm.add("tokens", s.Tokens.node())
			seq.Content = append(seq.Content, sm.n)
		}
		m.add("subagents", seq)
	}
	return m
}

func (t Tokens) valid() bool { return t.Cached >= 0 && t.CacheWrite >= 0 && t.CostUSD >= 0 }

// node lays out t as the report's tokens mapping.
func (t Tokens) node() *yaml.Node {
	tokens := newMapping()
	tokens.integer("prompt", t.Prompt)
	tokens.integer("completion", t.Completion)
	if t.Cached > 0 {
		tokens.integer("cached", t.Cached)
	}
	if t.CacheWrite > 0 {
		tokens.integer("cache_write", t.CacheWrite)
	}
	if t.CostUSD > 0 {
		tokens.float("cost_usd", t.CostUSD)
	}
	return tokens.n
}

// tokensField decodes a tokens mapping.
func tokensField(t *Tokens) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		return decodeFields(path+".", v, []field{
			{"prompt", intField(&t.Prompt)},
			{"completion", intField(&t.Completion)},
			{"cached", intField(&t.Cached)},
			{"cache_write", intField(&t.CacheWrite)},
			{"cost_usd", floatField(&t.CostUSD)},
		})
	}
}

func subagentsField(dst *[]Subagent) func(string, *yaml.Node) error {
	return func(path string, v *yaml.Node) error {
		return listField(path, v, func(p string, e *yaml.Node) error {
			if e.Kind != yaml.MappingNode {
				return typeError(p, e, "a mapping like {id: t1.sub1, goal: ..., tokens: {prompt: 0, completion: 0}}")
			}
			var s Subagent
			if err := decodeFields(p+".", e, []field{
				{"id", stringField(&s.ID)},
				{"goal", stringField(&s.Goal)},
				{"tokens", tokensField(&s.Tokens)},
			}); err != nil {
				return err
			}
			*dst = append(*dst, s)
			return nil
		})
	}
}

// Marshal renders the report as a file. It refuses a report ParseReport
// would refuse, and what it returns parses back to an equal report.
func (r *Report) Marshal() ([]byte, error) { return r.marshal("") }

func (r *Report) marshal(name string) ([]byte, error) {
	n := *r
	n.bound()
	n.FilesChanged = nilIfEmpty(n.FilesChanged)
	if err := n.validate(name); err != nil {
		return nil, withFile(name, err)
	}
	data, err := encodeFile(n.header(), n.Body)
	if err != nil {
		return nil, withFile(name, err)
	}
	back, err := ParseReport(name, data)
	if err != nil {
		return nil, fmt.Errorf("report %q does not survive encoding (a bug in package protocol): %w", r.ID, err)
	}
	if !reflect.DeepEqual(&n, back) {
		return nil, fmt.Errorf("report %q does not survive encoding (a bug in package protocol): it reads back as %+v", r.ID, back)
	}
	return data, nil
}

// What a report keeps of each unbounded field: together well under
// MaxFileSize, so that an agent's 2 MB answer or a change of 100 000 files
// still makes a report the watcher can write and planagent read (a report
// refused for its size lost the task).
const (
	MaxReportBody    = 256 << 10
	MaxReportError   = 16 << 10
	MaxReportSummary = 4 << 10
	MaxReportFiles   = 256 << 10 // the files_changed paths together
	maxReportPath    = 4 << 10
	maxReportGoal    = 1 << 10
	maxSubagents     = 100
)

// bound cuts r's text fields to the limits above, saying what was cut.
// It works on r's own copy of the slices (marshal's copy shares them).
func (r *Report) bound() {
	r.Body = clip.String(r.Body, MaxReportBody)
	r.Error = clip.String(r.Error, MaxReportError)
	r.Summary = clip.String(r.Summary, MaxReportSummary)
	if len(r.FilesChanged) > 0 {
		files := make([]string, 0, len(r.FilesChanged))
		total := 0
		for _, f := range r.FilesChanged {
			f = clip.String(f, maxReportPath)
			if total+len(f) > MaxReportFiles {
				break
			}
			total += len(f)
			files = append(files, f)
		}
		if left := len(r.FilesChanged) - len(files); left > 0 {
			r.Body += fmt.Sprintf("\n\n[files_changed truncated: %d more files not listed]", left)
		}
		r.FilesChanged = files
	}
	if len(r.Subagents) > 0 {
		subs := make([]Subagent, 0, min(len(r.Subagents), maxSubagents))
		for i, s := range r.Subagents {
			if i == maxSubagents {
				r.Body += fmt.Sprintf("\n\n[subagents truncated: %d more not listed]", len(r.Subagents)-i)
				break
			}
			s.Goal = clip.String(s.Goal, maxReportGoal)
			subs = append(subs, s)
		}
		r.Subagents = subs
	}
}
