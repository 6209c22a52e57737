// Package judge asks the model which of a task's passing attempts is best
// (`judge: llm`, docs/attempts.md). It only breaks ties: the attempts it
// is shown passed the same acceptance commands and are equal under the
// deterministic ranking, so whatever it answers merges tested code. An
// answer it cannot use is an error, and the caller keeps the
// deterministic order.
package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/codeagent/codeagent/internal/clip"
	"github.com/codeagent/codeagent/internal/llm"
)

// ChatClient is the part of the llm client the judge uses.
type ChatClient interface {
	Chat(ctx context.Context, req llm.Request, onToken func(string)) (*llm.Response, error)
}

// Marker opens the judge's system message, so test servers (and a person
// reading a model server's log) can tell its requests apart.
const Marker = "You judge several attempts at one coding task."

// DefaultMaxDiff bounds the diffs shown to the model, all candidates
// together (bytes), when LLM.MaxDiff is 0: a handful of attempts at one
// task fit a model's window with room for its answer.
const DefaultMaxDiff = 96 << 10

// ErrUnusable is an answer of the model's that names no candidate: no
// pick call, arguments that are not JSON, an attempt that was not
// shown, or no reason.
var ErrUnusable = errors.New("the model's judgement is unusable")

// Task is what every candidate was asked to do.
type Task struct {
	ID, Title, Description string
	Acceptance             []string
}

// Candidate is one passing attempt: its number and its patch against the
// task's base (what `planagent diff RUN TASK --attempt N` prints).
type Candidate struct {
	Attempt int
	Diff    string
}

// Verdict is the model's pick and why, with what asking cost.
type Verdict struct {
	Attempt int
	Reason  string
	Usage   llm.Usage
}

// LLM is the judge over a model.
type LLM struct {
	Client ChatClient
	Model  string // "" = the client's
	// MaxDiff bounds the diffs shown, all together (0: DefaultMaxDiff).
	MaxDiff int
}

type pickArgs struct {
	Attempt json.Number `json:"attempt"`
	Reason  string      `json:"reason"`
}

func pickTool() llm.Tool {
	return llm.Tool{Name: "pick", Description: "Pick the best attempt.", Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "attempt": {"type": "integer", "description": "the number of the attempt to merge, one of those shown"},
    "reason": {"type": "string", "description": "two or three sentences: why this one over the others"}
  },
  "required": ["attempt", "reason"]
}`)}
}

// Pick asks the model once which of the tied candidates to merge. The
// Verdict's Usage is filled in whenever the model answered, an unusable
// answer included (its tokens were spent).
func (j *LLM) Pick(ctx context.Context, t Task, tied []Candidate) (Verdict, error) {
	if len(tied) < 2 {
		return Verdict{}, fmt.Errorf("judge: %d candidates: there is nothing to choose between", len(tied))
	}
	resp, err := j.Client.Chat(ctx, llm.Request{
		Model: j.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: Marker + " Each attempt passed the task's acceptance commands, and they rank equal on them. " +
				"Read the diffs and call the pick tool exactly once with the attempt to merge: the one that does the task most correctly and completely, " +
				"fits the code around it best, and is simplest to maintain. Do not pick an attempt for its size alone."},
			{Role: llm.RoleUser, Content: prompt(t, tied, j.maxDiff())},
		},
		Tools: []llm.Tool{pickTool()},
	}, nil)
	if err != nil {
		return Verdict{}, fmt.Errorf("judge: ask the model: %w", err)
	}
	v := Verdict{Usage: resp.Usage}
	attempt, reason, err := parse(resp.Message.ToolCalls, tied)
	if err != nil {
		return v, fmt.Errorf("judge: %w", err)
	}
	v.Attempt, v.Reason = attempt, reason
	return v, nil
}

func (j *LLM) maxDiff() int {
	if j.MaxDiff > 0 {
		return j.MaxDiff
	}
	return DefaultMaxDiff
}

// parse reads the pick call of an answer.
func parse(calls []llm.ToolCall, tied []Candidate) (int, string, error) {
	for _, tc := range calls {
		if tc.Name != "pick" {
			continue
		}
		var a pickArgs
		if err := json.Unmarshal([]byte(tc.Arguments), &a); err != nil {
			return 0, "", fmt.Errorf("%w: the pick arguments are not valid JSON (%v): %s", ErrUnusable, err, clip.String(tc.Arguments, 200)) //nolint:errorlint // one wrapped cause: the sentinel
		}
		n, err := strconv.Atoi(strings.TrimSpace(a.Attempt.String()))
		if err != nil {
			return 0, "", fmt.Errorf("%w: attempt %q is not a whole number", ErrUnusable, a.Attempt.String())
		}
		if !slices.ContainsFunc(tied, func(c Candidate) bool { return c.Attempt == n }) {
			return 0, "", fmt.Errorf("%w: it picked attempt %d, not one of %s", ErrUnusable, n, numbers(tied))
		}
		reason := strings.TrimSpace(a.Reason)
		if reason == "" || strings.EqualFold(reason, "n/a") {
			return 0, "", fmt.Errorf("%w: it picked attempt %d without saying why", ErrUnusable, n)
		}
		return n, reason, nil
	}
	return 0, "", fmt.Errorf("%w: the model did not call pick", ErrUnusable)
}

// prompt shows the task and each candidate's diff, each cut to an equal
// share of max (a cut diff says how much was left out).
func prompt(t Task, tied []Candidate, max int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s: %s\n\n%s\n", t.ID, t.Title, t.Description)
	if len(t.Acceptance) > 0 {
		b.WriteString("\nAcceptance commands (every attempt below passed them all):\n")
		for _, c := range t.Acceptance {
			fmt.Fprintf(&b, "- %s\n", c)
		}
	}
	fmt.Fprintf(&b, "\nThe attempts: %s.\n", numbers(tied))
	share := max / len(tied)
	for _, c := range tied {
		fmt.Fprintf(&b, "\n=== attempt %d ===\n%s\n", c.Attempt, clip.String(c.Diff, share))
	}
	return b.String()
}

func numbers(cs []Candidate) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = strconv.Itoa(c.Attempt)
	}
	return strings.Join(s, ", ")
}
