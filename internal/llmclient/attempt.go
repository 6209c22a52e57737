package llmclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llm"
)

// attempt is one try of a request, bounded by RequestTimeout.
func (c *Client) attempt(ctx context.Context, cl call, onToken func(string)) (*llm.Response, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errAttemptDue)
	defer cancel()
	ctx, rec, cancelIdle := withExchange(ctx, cl.patch, c.idle)
	defer cancelIdle(nil)
	creq, sent := cl.creq, cl.sent
	rec.tee = teeRaw
	if creq.Stream {
		rec.tee = teeLines
	}
	if creq.Stream {
		return c.stream(ctx, creq, sent, rec, onToken)
	}
	resp, err := c.api.CreateChatCompletion(ctx, creq)
	if err != nil {
		return nil, c.attemptError(ctx, creq.Model, rec, err)
	}
	if len(resp.Choices) == 0 {
		return nil, &llm.Error{BaseURL: c.baseURL, Model: creq.Model, Status: 200, Retriable: true,
			Message: "the response has no choices"}
	}
	choice := resp.Choices[0]
	x := parseExtras(rec.raw.Bytes(), false)
	out := c.response(creq.Tools, sent, fromWire(choice.Message), string(choice.FinishReason), &resp.Usage, x)
	rec.extra.apply(&out.Usage)
	return out, nil
}

// stream reads a streaming answer, cancelling the attempt when the server
// stays silent for IdleTimeout.
func (c *Client) stream(ctx context.Context, creq openai.ChatCompletionRequest, sent []llm.Message, rec *exchange, onToken func(string)) (*llm.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(c.idle, func() { cancel(ErrIdle) })
	defer idle.Stop()

	st, err := c.api.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return nil, c.attemptError(ctx, creq.Model, rec, err)
	}
	defer st.Close()
	var acc streamed
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, c.attemptError(ctx, creq.Model, rec, err)
		}
		idle.Reset(c.idle)
		acc.add(chunk, onToken)
	}
	if acc.finish == "" {
		// A clean EOF without finish_reason is a proxy or server that
		// dropped the upstream: the answer may be incomplete.
		return nil, c.attemptError(ctx, creq.Model, rec, ErrCutStream)
	}
	msg := llm.Message{
		Role:             llm.RoleAssistant,
		Content:          acc.content.String(),
		ReasoningContent: acc.reasoning.String(),
		ToolCalls:        acc.calls.calls,
	}
	out := c.response(creq.Tools, sent, msg, acc.finish, acc.usage, rec.lines.result())
	rec.extra.apply(&out.Usage)
	return out, nil
}

// streamed accumulates the chunks of one streamed answer.
type streamed struct {
	content, reasoning strings.Builder
	calls              callAccumulator
	finish             string
	usage              *openai.Usage
}

func (s *streamed) add(chunk openai.ChatCompletionStreamResponse, onToken func(string)) {
	if chunk.Usage != nil {
		s.usage = chunk.Usage
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // n is never above 1 here
		}
		if d := ch.Delta.Content; d != "" {
			s.content.WriteString(d)
			if onToken != nil {
				onToken(d)
			}
		}
		s.reasoning.WriteString(ch.Delta.ReasoningContent)
		for _, tc := range ch.Delta.ToolCalls {
			s.calls.add(tc)
		}
		if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
			s.finish = string(ch.FinishReason)
		}
	}
}

// response completes an answer: what go-openai did not read added from the
// raw body, tool calls made sendable, usage measured or estimated.
func (c *Client) response(tools []openai.Tool, sent []llm.Message, msg llm.Message, finish string, u *openai.Usage, x *extras) *llm.Response {
	msg.Role = llm.RoleAssistant
	if msg.ReasoningContent != "" {
		msg.ReasoningField = llm.ReasoningContent // go-openai reads only that one
	}
	x.apply(&msg)
	if msg.ReasoningField == "" && msg.ReasoningContent != "" {
		msg.ReasoningField = fieldReasoning // OpenRouter's and Groq's
	}
	msg.ToolCalls = c.normalizeCalls(msg.ToolCalls)
	if len(msg.ToolCalls) > 0 && finish == string(openai.FinishReasonStop) {
		// Ollama says "stop" after tool calls; callers look at one field.
		finish = string(openai.FinishReasonToolCalls)
	}
	usage, ok := usageFrom(u)
	if !ok {
		usage = llm.Usage{
			Prompt:     llm.EstimateTokens(sent) + toolTokens(tools),
			Completion: llm.EstimateTokens([]llm.Message{msg}),
			Estimated:  true,
		}
	}
	if usage.Cached == 0 && x != nil {
		usage.Cached = x.cacheHit // DeepSeek reports its cache hits apart
	}
	return &llm.Response{Message: msg, FinishReason: finish, Usage: usage}
}

// normalizeCalls gives every call what the API needs when the call is sent
// back in the history: a unique id and arguments ("{}" when empty,
// since go-openai would drop an empty string and some servers then 400).
func (c *Client) normalizeCalls(calls []llm.ToolCall) []llm.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]llm.ToolCall, 0, len(calls))
	seen := map[string]bool{}
	for _, tc := range calls {
		if tc.ID == "" || seen[tc.ID] {
			tc.ID = fmt.Sprintf("call_%d", c.callSeq.Add(1))
		}
		seen[tc.ID] = true
		if tc.Oversize == 0 && len(tc.Arguments) > llm.MaxToolArguments {
			tc.Oversize = len(tc.Arguments) // a non-streamed answer's
		}
		if tc.Oversize > 0 {
			tc.Arguments = "{}"
		}
		if strings.TrimSpace(tc.Arguments) == "" {
			tc.Arguments = "{}"
		}
		out = append(out, tc)
	}
	return out
}

func usageFrom(u *openai.Usage) (llm.Usage, bool) {
	if u == nil || u.PromptTokens+u.CompletionTokens == 0 {
		return llm.Usage{}, false
	}
	out := llm.Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.Cached = u.PromptTokensDetails.CachedTokens
	}
	return out, true
}

// toolTokens estimates what the tool definitions add to a prompt.
func toolTokens(tools []openai.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return 0 // go-openai would fail to send these anyway
	}
	return (len(raw) + 3) / 4
}
