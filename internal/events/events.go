// Package events holds the typed progress events both programs emit (seed
// 001's names plus task-level ones) and the sinks that render them: one JSON
// object per line for CI and a one-line-per-step view for people.
package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/clip"
)

// Type names an event; the values are a contract for --json consumers.
type Type string

const (
	ResponseStart Type = "response_start"
	Token         Type = "token"
	ToolCall      Type = "tool_call"
	ToolResult    Type = "tool_result"
	Compaction    Type = "compaction"
	SubagentStart Type = "subagent_start"
	SubagentEnd   Type = "subagent_end"
	ResponseEnd   Type = "response_end"
	PlanCreated   Type = "plan_created"
	StepStart     Type = "step_start"
	StepComplete  Type = "step_complete"
	PlanComplete  Type = "plan_complete"
	TaskStart     Type = "task_start"
	TaskEnd       Type = "task_end"
	Decision      Type = "decision"
	RunEnd        Type = "run_end"
	Log           Type = "log"
	// EgressRefused: the egress proxy turned away a request of an attempt
	// (data: attempt, method, host, port, reason).
	EgressRefused Type = "egress_refused"
)

// Usage is token usage attached to response_end, task_end and run_end.
type Usage struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
	Cached     int `json:"cached,omitempty"`
	// CacheWrite is the prompt tokens written to the provider's cache;
	// CostUSD what the server itself said the calls cost (0: it did not).
	CacheWrite int     `json:"cache_write,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
}

// Event is one progress event. Fields not relevant to a type stay empty.
type Event struct {
	Type    Type           `json:"type"`
	Time    time.Time      `json:"time"`
	RunID   string         `json:"run_id,omitempty"`
	TaskID  string         `json:"task_id,omitempty"`
	Mode    string         `json:"mode,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	CallID  string         `json:"call_id,omitempty"`
	Args    string         `json:"args,omitempty"`
	Text    string         `json:"text,omitempty"`
	Status  string         `json:"status,omitempty"`
	IsError bool           `json:"is_error,omitempty"`
	Usage   *Usage         `json:"usage,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
}

// Sink receives events. Implementations must be safe for concurrent use.
type Sink interface {
	Emit(Event)
}

// Func adapts a function to a Sink.
type Func func(Event)

// Emit calls f.
func (f Func) Emit(e Event) { f(e) }

// Discard drops every event.
var Discard Sink = Func(func(Event) {})

// Multi fans an event out to several sinks.
type Multi []Sink

// Emit sends e to every sink.
func (m Multi) Emit(e Event) {
	for _, s := range m {
		if s != nil {
			s.Emit(e)
		}
	}
}

// WithTask returns a sink that stamps run and task ids onto events that lack them.
func WithTask(s Sink, runID, taskID string) Sink {
	return Func(func(e Event) {
		if e.RunID == "" {
			e.RunID = runID
		}
		if e.TaskID == "" {
			e.TaskID = taskID
		}
		s.Emit(e)
	})
}

// JSON writes one JSON object per line.
type JSON struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSON returns a JSON-lines sink on w.
func NewJSON(w io.Writer) *JSON { return &JSON{w: w} }

// MaxField bounds the text fields (args, text) of a line JSON writes: a
// model's 50 MB tool-call arguments or 2 MB answer must not become one
// line of events.jsonl that every reader of the file then holds.
const MaxField = 64 << 10

// Emit writes e as one line; the time is filled in when missing.
func (j *JSON) Emit(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Args = clip.String(e.Args, MaxField)
	e.Text = clip.String(e.Text, MaxField)
	// Not HTML: a tool's "a > b" stays readable (json.Marshal would write \u003e).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.w.Write(b.Bytes())
}

// Text renders events for a person: one line per tool call and result,
// streamed tokens as they come.
type Text struct {
	mu       sync.Mutex
	w        io.Writer
	midToken bool
}

// NewText returns a human-readable sink on w.
func NewText(w io.Writer) *Text { return &Text{w: w} }

// Emit renders e.
func (t *Text) Emit(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Type == Token {
		_, _ = io.WriteString(t.w, e.Text)
		t.midToken = e.Text != "" && !strings.HasSuffix(e.Text, "\n")
		return
	}
	line := Line(e)
	if line == "" {
		return
	}
	if t.midToken {
		_, _ = io.WriteString(t.w, "\n")
		t.midToken = false
	}
	_, _ = fmt.Fprintln(t.w, line)
}

// Line is the one-line human rendering of e ("" for events not shown).
func Line(e Event) string {
	prefix := ""
	if e.TaskID != "" {
		prefix = "[" + e.TaskID + "] "
	}
	switch e.Type {
	case ToolCall:
		return prefix + "→ " + e.Tool + " " + Shorten(e.Args, 100)
	case ToolResult:
		mark := "✓"
		if e.IsError {
			mark = "✗"
		}
		text := firstLine(e.Text)
		if e.Tool == "shell_exec" {
			// A command's outcome is its last line ("exit code: N").
			text = lastLine(e.Text)
			if text != "exit code: 0" && !e.IsError {
				mark = "✗"
			}
		}
		return prefix + "  " + mark + " " + e.Tool + ": " + Shorten(text, 100)
	case Compaction, SubagentStart, SubagentEnd, PlanCreated, StepStart, StepComplete, PlanComplete,
		TaskStart, TaskEnd, Decision, RunEnd, Log:
		s := prefix + string(e.Type)
		if e.Status != "" {
			s += " " + e.Status
		}
		if e.Text != "" {
			s += ": " + Shorten(firstLine(e.Text), 160)
		}
		return s
	case ResponseEnd:
		if e.Usage != nil {
			return fmt.Sprintf("%stokens: %d prompt, %d completion", prefix, e.Usage.Prompt, e.Usage.Completion)
		}
	}
	return ""
}

// Shorten cuts s to n runes with an ellipsis.
func Shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Title is s on one line, cut to at most n runes at a word's end with "…",
// for a title or a commit subject: a word cut in half reads as a typo,
// and a `code span` cut open leaves a stray backtick (dropped, with what
// followed it, when the cut leaves one unmatched).
func Title(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n-1]) // room for the ellipsis
	if i := strings.LastIndexByte(cut, ' '); i >= len(cut)/2 {
		cut = cut[:i]
	}
	if strings.Count(cut, "`")%2 == 1 {
		cut = cut[:strings.LastIndexByte(cut, '`')]
	}
	return strings.TrimRight(cut, " ,;:-") + "…"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
