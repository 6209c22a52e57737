// Package anthropicmsg is the client's dialect for Anthropic's Messages API
// (/v1/messages) through the official SDK: llmclient.Config.Anthropic is
// New where a client may speak it (cmdutil's factory, the tests against
// anthropictest's fake). Apart from llmclient so that a client for Chat
// Completions or Responses, and every test binary that builds one, does
// not link the SDK.
package anthropicmsg

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
)

// anthropicBaseURL is used when api is anthropic but base_url was left at
// OpenAI's default.
const anthropicBaseURL = "https://api.anthropic.com"

// anthropicDefaultMaxTokens is sent when Config.MaxTokens is 0: the
// Messages API requires max_tokens.
const anthropicDefaultMaxTokens = 8192

// maxCacheBreakpoints is Anthropic's limit on cache_control blocks in one
// request (400 above it).
const maxCacheBreakpoints = 4

// dialect speaks Anthropic's Messages API (/v1/messages) through the
// official SDK. The SDK's own retries are off: the Client retries.
type dialect struct {
	api      anthropic.Client
	cfg      llmclient.Config
	idle     time.Duration
	thinking int64 // budget tokens; 0: thinking off
}

// New is the dialect of a client whose API is anthropic
// (llmclient.Config.Anthropic): cfg is the client's, with its defaults
// filled in, and doer what the client sends through.
func New(cfg llmclient.Config, doer llmclient.HTTPDoer) llmclient.Dialect {
	opts := []option.RequestOption{
		// Only what the config says: no ANTHROPIC_* variable read behind
		// the config's back (config reads ANTHROPIC_API_KEY itself).
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(anthropicURL(cfg.BaseURL)),
		option.WithHTTPClient(doer),
		option.WithMaxRetries(0),
	}
	return &dialect{
		api:      anthropic.NewClient(opts...),
		cfg:      cfg,
		idle:     cfg.IdleTimeout,
		thinking: int64(thinkingBudget(cfg.ThinkingBudget, cfg.ReasoningEffort, cfg.MaxTokens)),
	}
}

// anthropicURL is the SDK's base URL: without the /v1 an OpenAI-style
// base_url ends in (the SDK adds v1/messages), and Anthropic's own when the
// setting still names OpenAI's default host.
func anthropicURL(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || strings.EqualFold(u.Hostname(), "api.openai.com") {
		return anthropicBaseURL
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	return u.String()
}

func (*dialect) Provider() string { return "anthropic" }

func (d *dialect) Send(ctx context.Context, r llmclient.DialectRequest) (*llm.Response, error) {
	params := d.params(r)
	if !r.Stream {
		msg, err := d.api.Messages.New(ctx, params)
		if err != nil {
			return nil, err
		}
		return anthropicResponse(msg), nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(d.idle, func() { cancel(llmclient.ErrIdle) })
	defer idle.Stop()
	st := d.api.Messages.NewStreaming(ctx, params)
	defer st.Close()
	var acc anthropic.Message
	stopped := false
	for st.Next() {
		idle.Reset(d.idle)
		ev := st.Current()
		if err := acc.Accumulate(ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" && r.OnToken != nil {
				r.OnToken(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := st.Err(); err != nil {
		return nil, llmclient.IdleOr(ctx, err)
	}
	if !stopped {
		// A clean end without message_stop is a dropped connection: the
		// answer may be incomplete.
		return nil, llmclient.ErrCutStream
	}
	return anthropicResponse(&acc), nil
}

// params is the wire request: system on top, tool calls as tool_use blocks
// answered by tool_result blocks, thinking replayed, cache breakpoints set.
func (d *dialect) params(r llmclient.DialectRequest) anthropic.MessageNewParams {
	system, msgs := anthropicMessages(r.Sent)
	maxTokens := int64(d.cfg.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = anthropicDefaultMaxTokens
	}
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(r.Model),
		MaxTokens: maxTokens,
		System:    system,
		Messages:  msgs,
		Tools:     anthropicTools(r.Tools),
	}
	if d.thinking > 0 && thinkingReplayable(r.Sent) {
		// max_tokens counts the thinking: it must exceed the budget.
		if p.MaxTokens <= d.thinking {
			p.MaxTokens = d.thinking + maxTokens
		}
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: d.thinking}}
	}
	if !d.cfg.NoPromptCache {
		setCacheBreakpoints(&p)
	}
	return p
}

// thinkingReplayable reports whether thinking may be on for this request:
// with thinking on, the assistant message that made the calls now being
// answered must start with its thinking block, and a history written
// without thinking (another dialect, thinking turned on midway) has none to
// send. Such a request goes without thinking rather than being refused.
func thinkingReplayable(msgs []llm.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch m.Role {
		case llm.RoleTool:
			continue
		case llm.RoleAssistant:
			if len(m.ToolCalls) == 0 {
				return true
			}
			var st anthropicState
			return llmclient.ProviderState(m, llm.APIAnthropic, &st) && len(st.Thinking) > 0
		default:
			return true
		}
	}
	return true
}

// anthropicState is what an assistant message must carry back to the
// Messages API: its thinking and redacted_thinking blocks, in order, with
// their signatures. It is kept in Message.ProviderState under "anthropic".
type anthropicState struct {
	Thinking []anthropicThinking `json:"thinking,omitempty"`
}

type anthropicThinking struct {
	Type      string `json:"type"` // thinking or redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"` // redacted_thinking
}

// anthropicMessages converts a sanitised history. System and developer
// messages before the first turn become the top-level system; later ones
// become user text (the API has no system role in messages). Consecutive
// messages of one role are merged into one, tool results included: the
// API wants every tool_result of a turn in the one user message after it.
func anthropicMessages(msgs []llm.Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	var system []anthropic.TextBlockParam
	i := 0
	for ; i < len(msgs) && (msgs[i].Role == llm.RoleSystem || msgs[i].Role == llm.RoleDeveloper); i++ {
		system = append(system, anthropic.TextBlockParam{Text: nonEmpty(msgs[i].Content)})
	}
	var out []anthropic.MessageParam
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			if user && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			}
			if !user && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if user {
			out = append(out, anthropic.NewUserMessage(blocks...))
		} else {
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, m := range msgs[i:] {
		switch m.Role {
		case llm.RoleAssistant:
			add(false, anthropicAssistant(m)...)
		case llm.RoleTool:
			add(true, anthropic.NewToolResultBlock(anthropicID(m.ToolCallID), nonEmpty(m.Content), false))
		case llm.RoleSystem, llm.RoleDeveloper:
			add(true, anthropic.NewTextBlock("System: "+nonEmpty(m.Content)))
		default:
			add(true, anthropic.NewTextBlock(nonEmpty(m.Content)))
		}
	}
	if len(out) > 0 && out[0].OfAssistant != nil {
		// The first message must be the user's.
		out = append([]anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(llm.NoContent))}, out...)
	}
	return system, out
}

// anthropicAssistant is an assistant message's blocks: its thinking first,
// as the API wants it before the tool_use it led to, then text, then calls.
func anthropicAssistant(m llm.Message) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	var st anthropicState
	if llmclient.ProviderState(m, llm.APIAnthropic, &st) {
		for _, t := range st.Thinking {
			switch t.Type {
			case "thinking":
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfThinking: &anthropic.ThinkingBlockParam{Thinking: t.Thinking, Signature: t.Signature}})
			case "redacted_thinking":
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: t.Data}})
			}
		}
	}
	// The API refuses empty text blocks; Sanitize's placeholder is left
	// out when there are calls to carry the turn.
	if text := m.Content; strings.TrimSpace(text) != "" && !(text == llm.NoContent && len(m.ToolCalls) > 0) {
		blocks = append(blocks, anthropic.NewTextBlock(text))
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{
			ID: anthropicID(tc.ID), Name: tc.Name, Input: toolInput(tc.Arguments),
		}})
	}
	if len(blocks) == 0 {
		blocks = append(blocks, anthropic.NewTextBlock(llm.NoContent))
	}
	return blocks
}

// anthropicID is a tool call id as the Messages API accepts it
// (^[a-zA-Z0-9_-]+$): ids other servers made ("functions.read_file:0" from
// Kimi) get their other characters replaced, the same way in the tool_use
// and in its tool_result, so the pair still matches.
func anthropicID(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, id)
}

// toolInput is a call's arguments as the object tool_use.input must be;
// text that is not a JSON object (a model's broken JSON) goes as {}.
func toolInput(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	return json.RawMessage("{}")
}

func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return llm.EmptyContent
	}
	return s
}

// anthropicTools converts tool definitions; the JSON Schema's properties
// and required go where the SDK has fields, every other keyword as is.
func anthropicTools(tools []llm.Tool) []anthropic.ToolUnionParam {
	if len(tools) == 0 {
		return nil
	}
	out := make([]anthropic.ToolUnionParam, len(tools))
	for i, t := range tools {
		var schema map[string]any
		_ = json.Unmarshal(t.Parameters, &schema) // a bad schema goes as an empty object
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type":
			case "properties":
				in.Properties = v
			case "required":
				for _, r := range asList(v) {
					if s, ok := r.(string); ok {
						in.Required = append(in.Required, s)
					}
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tp := &anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		out[i] = anthropic.ToolUnionParam{OfTool: tp}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// setCacheBreakpoints marks up to four cache_control breakpoints: the last
// tool, the last system block, the end of the conversation (so the next
// turn reads all of it from the cache), and the end of the previous turn
// (the last user message before the latest assistant one), which the
// previous request wrote: an exact hit, whatever the provider's lookback.
func setCacheBreakpoints(p *anthropic.MessageNewParams) {
	left := maxCacheBreakpoints
	if n := len(p.Tools); n > 0 && p.Tools[n-1].OfTool != nil {
		p.Tools[n-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
		left--
	}
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
		left--
	}
	marked := 0
	sawAssistant := false
	for i := len(p.Messages) - 1; i >= 0 && left > 0 && marked < 2; i-- {
		m := p.Messages[i]
		if m.OfAssistant != nil {
			sawAssistant = true
			continue
		}
		if m.OfUser == nil || (marked == 1 && !sawAssistant) {
			continue
		}
		if markLastBlock(m.OfUser.Content) {
			marked++
			left--
			sawAssistant = false
		}
	}
}

// markLastBlock sets cache_control on the last block that can carry it.
func markLastBlock(blocks []anthropic.ContentBlockParamUnion) bool {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := &blocks[i]
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = anthropic.NewCacheControlEphemeralParam()
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = anthropic.NewCacheControlEphemeralParam()
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = anthropic.NewCacheControlEphemeralParam()
		default:
			continue
		}
		return true
	}
	return false
}

// anthropicResponse converts the API's answer.
func anthropicResponse(m *anthropic.Message) *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	var text, reasoning strings.Builder
	var st anthropicState
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
			st.Thinking = append(st.Thinking, anthropicThinking{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			st.Thinking = append(st.Thinking, anthropicThinking{Type: b.Type, Data: b.Data})
		case "tool_use":
			args := string(b.Input)
			if strings.TrimSpace(args) == "" || args == "null" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	msg.Content = text.String()
	msg.ReasoningContent = reasoning.String()
	if len(st.Thinking) > 0 {
		msg.ProviderState = llmclient.WithProviderState(llm.APIAnthropic, st)
	}
	u := m.Usage
	usage := llm.Usage{
		Prompt:     int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
		Completion: int(u.OutputTokens),
		Cached:     int(u.CacheReadInputTokens),
		CacheWrite: int(u.CacheCreationInputTokens),
	}
	return &llm.Response{Message: msg, FinishReason: anthropicFinish(string(m.StopReason), len(msg.ToolCalls) > 0), Usage: usage}
}

// anthropicFinish maps stop_reason onto the chat completions names the
// rest of the code knows.
func anthropicFinish(reason string, calls bool) string {
	switch reason {
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	case "end_turn", "stop_sequence", "pause_turn":
		if calls {
			return "tool_calls"
		}
		return "stop"
	}
	return reason
}

// Classify reads the SDK's API error: status, the error type as Code
// (overloaded_error, rate_limit_error, ...) and the message. An error event
// inside a 200 stream gets the status its type stands for, so that an
// overloaded or failing server is retried.
func (*dialect) Classify(err error, e *llm.Error) bool {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return false
	}
	e.Status = apiErr.StatusCode
	e.Code = string(apiErr.Type())
	e.Message = apiErr.Message
	if e.Message == "" {
		e.Message = llmclient.BodyText([]byte(apiErr.RawJSON()))
	}
	if e.Status < 400 {
		switch e.Code {
		case "overloaded_error":
			e.Status = 529
		case "api_error":
			e.Status = 500
		case "rate_limit_error":
			e.Status = 429
		}
	}
	if e.Code == "invalid_request_error" && strings.Contains(strings.ToLower(e.Message), "prompt is too long") {
		e.Code = "context_length_exceeded"
	}
	return true
}

// minThinkingBudget is Anthropic's smallest thinking budget.
const minThinkingBudget = 1024

// effortBudgets maps the reasoning_effort setting to a thinking budget
// (Anthropic's API has budgets, not efforts): low is the 4k Anthropic's
// docs start from, each step doubles it, and none turns thinking off.
var effortBudgets = map[string]int{
	"minimal": minThinkingBudget, "low": 4096, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 32768,
}

// thinkingBudget is the budget sent: the thinking_budget setting when set
// (config checks it is below max_tokens, as the API requires), else the
// effort's, capped so that max_tokens leaves the answer 1024 tokens; 0
// (off) when that leaves less than the API's minimum.
func thinkingBudget(budget int, effort string, maxTokens int) int {
	if budget > 0 {
		return budget
	}
	budget = effortBudgets[effort]
	if budget <= 0 {
		return 0
	}
	if maxTokens > 0 {
		budget = min(budget, maxTokens-1024)
	}
	if budget < minThinkingBudget {
		return 0
	}
	return budget
}
