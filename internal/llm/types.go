package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
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

// Config configures a Client. Zero values take the defaults named on each field.
type Config struct {
	BaseURL        string        // default https://api.openai.com/v1
	APIKey         string        // required at the first call; never logged
	Model          string        // default model of requests that name none
	RequestTimeout time.Duration // per attempt, whole request incl. stream (default 10m)
	IdleTimeout    time.Duration // max silence between stream chunks and between reads of any answer's body (default 90s)
	MaxRetries     int           // retries after the first attempt on 429/5xx/connection errors
	// DownGrace keeps trying a server that refuses connections (nothing
	// listens: a dial failure) or closes one under a request, past
	// MaxRetries, until this long has passed since the first such failure
	// in a row; 0: such failures count as any other. An attempt's agent sets it when its server is planagent's
	// model gateway, which is down while planagent restarts.
	DownGrace   time.Duration
	MaxTokens   int           // reserved output tokens sent as max_(completion_)tokens; 0 = not sent
	BackoffBase time.Duration // first backoff (default 1s), doubling per retry; tests set it small
	BackoffMax  time.Duration // cap of one backoff (default 30s)
	HTTPClient  *http.Client  // optional; its Timeout should be 0 (it would cut long streams)
	// API is the wire dialect: "chat", "anthropic", "responses", or ""
	// (or "auto") to choose from BaseURL and Model (ResolveAPI).
	API string
	// ReasoningEffort is how hard a reasoning model thinks ("": the
	// model's default): reasoning_effort on Chat Completions (through the
	// profile), reasoning.effort on the Responses API, and on Anthropic's
	// API a thinking budget unless ThinkingBudget sets one (thinkingBudget).
	ReasoningEffort string
	// ThinkingBudget turns on Anthropic extended thinking with this many
	// budget tokens (0: from ReasoningEffort, else off); the other
	// dialects ignore it.
	ThinkingBudget int
	// NoPromptCache leaves out the Anthropic cache breakpoints (the
	// caching benchmark's baseline); the other dialects ignore it.
	NoPromptCache bool
	// Compat overrides the provider profile picked from BaseURL, field by
	// field (keys: CompatKeys; "profile" forces one by name). New takes an
	// invalid map as no override; config validates it before.
	Compat map[string]string
	// OnRetry, when set, hears about each retry before its backoff, so that
	// callers can log or emit an event; the library itself prints nothing.
	OnRetry func(attempt int, wait time.Duration, err error)
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
