package llmtest

import "encoding/json"

// The request as the server decodes it: the chat completions wire format,
// written out here rather than taken from a client library so that the
// server checks what a client sends, not what one client library models,
// and so that only internal/llmclient depends on go-openai.

// Request is one decoded chat completions request.
type Request struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	// Fields some providers reject: the tests check which client sends them.
	Temperature       *float64 `json:"temperature,omitempty"`
	ParallelToolCalls *bool    `json:"parallel_tool_calls,omitempty"`
	ReasoningEffort   string   `json:"reasoning_effort,omitempty"`
}

// StreamOptions asks for a usage chunk at the end of a stream.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// The reasoning fields of the provider modes (modes.go); a pointer
	// tells an absent reasoning_content from an empty one.
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []WireCall      `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	FunctionCall     *FunctionCall   `json:"function_call,omitempty"` // the API's legacy form
}

// WireCall is a tool call inside a request's assistant message.
type WireCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
	// ExtraContent is Gemini's extension: {"google":{"thought_signature":…}}.
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

// FunctionCall names the function a tool call runs and its JSON arguments.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Tool is a tool definition of a request.
type Tool struct {
	Type     string       `json:"type"`
	Function *FunctionDef `json:"function,omitempty"`
}

// FunctionDef is the function a tool offers.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Usage is the token usage the server reports.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// Cost is OpenRouter's figure for the call in USD (usage.cost).
	Cost *float64 `json:"cost,omitempty"`
}

// PromptTokensDetails says how much of the prompt came from the cache
// (OpenRouter adds what was written to it).
type PromptTokensDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Roles and the tool type, as the API spells them.
const (
	roleSystem    = "system"
	roleDeveloper = "developer"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
	roleFunction  = "function"
	typeFunction  = "function"
)
