package llmtest

import (
	"encoding/json"
	"fmt"
	"time"
)

// ToolCall is one tool call the scripted model makes. An empty ID is filled
// in by the server (unless QuirkNoID).
type ToolCall struct {
	ID, Name, Arguments string
	// Repeat streams Arguments this many times over (0 and 1: once), each
	// time as the same pieces: a runaway model's 50 MB of arguments
	// without the server building them.
	Repeat int
}

// Quirk makes the server stream like some OpenAI-compatible servers do
// rather than like OpenAI. Quirks combine with |.
type Quirk uint

const (
	// QuirkNoIndex omits tool_calls[].index from stream deltas (Ollama).
	QuirkNoIndex Quirk = 1 << iota
	// QuirkRepeatName sends the function name and call id in every
	// argument chunk, not just the first.
	QuirkRepeatName
	// QuirkNoID sends tool calls without ids.
	QuirkNoID
)

// Reply is what the scripted model answers to one request.
type Reply struct {
	Content   string
	ToolCalls []ToolCall
	Usage     *Usage // nil: the server reports chars/4 figures
	NoUsage   bool   // send no usage at all
	// Header is set on a successful answer, e.g. LiteLLM's
	// x-litellm-response-cost.
	Header map[string]string

	// An injected HTTP error: Status (e.g. 429) with ErrorBody as the body
	// (default: an OpenAI-shaped error naming the status) and RetryAfter as
	// the Retry-After header when set.
	Status     int
	ErrorBody  string
	RetryAfter string

	Delay     time.Duration // before answering; a cancelled request ends it
	CutStream bool          // stream part of the answer, then end without finish_reason or [DONE]
	// StreamError streams part of the answer, then an error event
	// (type server_error) with this message inside the 200 stream, as
	// OpenAI does when a generation fails midway.
	StreamError string
	// Hang never answers until the client gives up. A streaming request
	// gets its headers and the first (role) chunk first, so the client's
	// idle timer between chunks is what must end it.
	Hang bool
	// StallBody sends a non-streamed answer's headers and the first bytes
	// of its body, then nothing until the client gives up: the stall after
	// the headers that only an idle timeout on the body read ends.
	StallBody bool
	Quirks    Quirk
	// Reasoning is the thinking streamed before the answer in a Mode that
	// has reasoning (a default text when empty).
	Reasoning string
}

// Text is a reply with content only.
func Text(s string) Reply { return Reply{Content: s} }

// Calls is a reply that calls tools.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call builds a tool call; args is marshalled to JSON unless it is a string
// or json.RawMessage, which is used verbatim (so tests can send broken JSON).
// It panics when args cannot be marshalled: that is a mistake in the test.
func Call(name string, args any) ToolCall {
	switch a := args.(type) {
	case string:
		return ToolCall{Name: name, Arguments: a}
	case json.RawMessage:
		return ToolCall{Name: name, Arguments: string(a)}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("llmtest.Call(%q): arguments do not marshal to JSON: %v", name, err))
	}
	return ToolCall{Name: name, Arguments: string(raw)}
}
