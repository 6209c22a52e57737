// Package llm holds the terms of a conversation with a model, whichever
// client carries it: messages, tool calls and tools, requests, responses
// and usage, the client's *Error and what callers ask of it (IsSetup,
// IsContextLength), the history sanitiser and the token estimate. It links
// no provider SDK and no OpenTelemetry, so that the agent, the tools, the
// planner and the orchestrator, and their tests, do not link them either;
// the client itself is package llmclient, imported where one is built.
package llm

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/tokens"
)

// Roles of the messages of a conversation.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer" // what newer OpenAI models call system
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation. Its JSON is the chat completions
// wire shape, so that session files read as what was sent.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ReasoningContent is what a reasoning model streamed as its thinking
	// (reasoning_content, or OpenRouter's reasoning); it goes back the way
	// the provider's Profile says, or not at all.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// ReasoningField is the answer's field the reasoning came in
	// ("reasoning_content" or "reasoning"): the echo profile sends it
	// back in the same one.
	ReasoningField string `json:"reasoning_field,omitempty"`
	// ReasoningDetails is OpenRouter's reasoning_details list as received
	// (its items may carry a provider's signature): opaque state returned
	// unchanged, kept in session files so a resumed task sends it too.
	ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`   // assistant messages
	ToolCallID       string          `json:"tool_call_id,omitempty"` // tool messages: the call answered
	// ProviderState is what a non-chat dialect must send back verbatim
	// with this assistant message (Anthropic thinking blocks with their
	// signatures, Responses reasoning items with encrypted content): a JSON
	// object keyed by dialect name, so that a history written under one
	// dialect and sent under another carries nothing the other rejects.
	// Chat Completions ignores it. See dialect.go.
	ProviderState json.RawMessage `json:"provider_state,omitempty"`
}

// ToolCall is one call the model made. Arguments is the model's JSON text,
// unparsed: the tool decides what it makes of it.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
	// ThoughtSignature is Gemini's extra_content.google.thought_signature
	// of this call: opaque, returned with the call when the profile says.
	ThoughtSignature string
	// Oversize is the length of arguments the server sent past
	// MaxToolArguments, 0 otherwise. The client never keeps them:
	// Arguments is then "{}" (what the history sends back), and the caller
	// must answer the call with an error instead of running it. Not kept
	// in session files: the error answer that follows says it all.
	Oversize int
}

// MaxToolArguments bounds one tool call's arguments (1 MiB): past it the
// client stops accumulating them (a model that streamed 50 MB of
// arguments took the agent to 388 MB).
const MaxToolArguments = 1 << 20

// wireCall is ToolCall's JSON: the API's nesting, kept for session files
// (files written before extra_content existed read the same).
type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	ExtraContent *extraContent `json:"extra_content,omitempty"`
}

// extraContent is Gemini's per-call extension of the OpenAI shape.
type extraContent struct {
	Google *struct {
		ThoughtSignature string `json:"thought_signature,omitempty"`
	} `json:"google,omitempty"`
}

func signatureExtra(sig string) *extraContent {
	if sig == "" {
		return nil
	}
	e := &extraContent{Google: &struct {
		ThoughtSignature string `json:"thought_signature,omitempty"`
	}{ThoughtSignature: sig}}
	return e
}

func (e *extraContent) signature() string {
	if e == nil || e.Google == nil {
		return ""
	}
	return e.Google.ThoughtSignature
}

// MarshalJSON writes the API's shape.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	w := wireCall{ID: c.ID, Type: "function", ExtraContent: signatureExtra(c.ThoughtSignature)}
	w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
	return json.Marshal(w)
}

// UnmarshalJSON reads the API's shape.
func (c *ToolCall) UnmarshalJSON(raw []byte) error {
	var w wireCall
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: w.Function.Arguments, ThoughtSignature: w.ExtraContent.signature()}
	return nil
}

// Tool is a function offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments; its type is "object".
	Parameters json.RawMessage
}

// Request is one chat completion request.
type Request struct {
	Model    string // overrides Config.Model (the summary model, for instance)
	Messages []Message
	Tools    []Tool
	Stream   bool
	// Temperature is sent when set and the provider's profile allows it.
	Temperature *float64
}

// Usage is token usage (tokens.Usage: the run record and the views keep it
// without linking this client).
type Usage = tokens.Usage

// Response is the assistant's answer.
type Response struct {
	Message      Message // role assistant; tool calls have ids (synthesised when a server omits them)
	FinishReason string
	Usage        Usage
}

// Meter sums usage across calls; safe for concurrent use (a run's total).
type Meter struct {
	mu sync.Mutex
	u  Usage
}

// Add records one response's usage.
func (m *Meter) Add(u Usage) {
	m.mu.Lock()
	m.u.Add(u)
	m.mu.Unlock()
}

// Total returns the sum so far.
func (m *Meter) Total() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u
}

// Error is a failed LLM call. Its message names base URL, model and status,
// never the API key.
type Error struct {
	Status     int           // HTTP status; 0 for connection errors
	Retriable  bool          // 429, 5xx, connection errors
	RetryAfter time.Duration // from Retry-After, when sent
	BaseURL    string
	Model      string
	Message    string // the server's message, key redacted
	Code       string // the server's error code when sent, e.g. "context_length_exceeded"
	Err        error
}

func (e *Error) Error() string {
	status := "connection failed"
	if e.Status != 0 {
		status = fmt.Sprintf("HTTP %d", e.Status)
	}
	msg := fmt.Sprintf("llm %s (model %s): %s: %s", e.BaseURL, e.Model, status, e.Message)
	if h := e.hint(); h != "" {
		msg += "; " + h
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }
