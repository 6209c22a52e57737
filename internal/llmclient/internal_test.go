package llmclient

import (
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llm"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{name: "absent", header: http.Header{}, want: 0},
		{name: "seconds", header: http.Header{"Retry-After": {"3"}}, want: 3 * time.Second},
		{name: "fractional seconds", header: http.Header{"Retry-After": {"0.5"}}, want: 500 * time.Millisecond},
		{name: "milliseconds win", header: http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}}, want: 250 * time.Millisecond},
		{name: "http date", header: http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, want: 7 * time.Second},
		{name: "date in the past", header: http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, want: 0},
		{name: "negative", header: http.Header{"Retry-After": {"-4"}}, want: 0},
		{name: "garbage", header: http.Header{"Retry-After": {"soon"}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	c := New(Config{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second})
	for attempt := range 40 {
		ceiling := min(100*time.Millisecond<<min(attempt, 10), time.Second)
		for range 50 {
			if got := c.backoff(attempt, 0); got < 0 || got > ceiling {
				t.Fatalf("backoff(%d) = %v, want within [0, %v]", attempt, got, ceiling)
			}
		}
		if got := c.backoff(attempt, 3*time.Second); got != 3*time.Second {
			t.Fatalf("backoff(%d, Retry-After 3s) = %v, want the server's 3s", attempt, got)
		}
	}
}

func idx(i int) *int { return &i }

func delta(index *int, id, name, args string) openai.ToolCall {
	return openai.ToolCall{Index: index, ID: id, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

func TestCallAccumulator(t *testing.T) {
	type call struct{ id, name, args string }
	tests := []struct {
		name   string
		deltas []openai.ToolCall
		want   []call
	}{
		{name: "openai: id and name once, arguments split", deltas: []openai.ToolCall{
			delta(idx(0), "a", "read_file", ""), delta(idx(0), "", "", `{"pa`), delta(idx(0), "", "", `th":1}`),
			delta(idx(1), "b", "glob", ""), delta(idx(1), "", "", `{}`),
		}, want: []call{{"a", "read_file", `{"path":1}`}, {"b", "glob", "{}"}}},
		{name: "interleaved indexes", deltas: []openai.ToolCall{
			delta(idx(0), "a", "x", `{"q":`), delta(idx(1), "b", "y", `{"r":`), delta(idx(0), "", "", `1}`), delta(idx(1), "", "", `2}`),
		}, want: []call{{"a", "x", `{"q":1}`}, {"b", "y", `{"r":2}`}}},
		{name: "name resent in every chunk", deltas: []openai.ToolCall{
			delta(idx(0), "a", "read_file", `{"p`), delta(idx(0), "a", "read_file", `":1}`),
		}, want: []call{{"a", "read_file", `{"p":1}`}}},
		{name: "name split over chunks", deltas: []openai.ToolCall{
			delta(idx(0), "a", "read_", ""), delta(idx(0), "", "file", `{}`),
		}, want: []call{{"a", "read_file", `{}`}}},
		{name: "every call numbered 0 but with its own id", deltas: []openai.ToolCall{
			delta(idx(0), "a", "x", `{}`), delta(idx(0), "b", "y", `{}`),
		}, want: []call{{"a", "x", `{}`}, {"b", "y", `{}`}}},
		{name: "no index, new id starts a call", deltas: []openai.ToolCall{
			delta(nil, "a", "x", `{"q"`), delta(nil, "", "", `:1}`), delta(nil, "b", "x", `{}`),
		}, want: []call{{"a", "x", `{"q":1}`}, {"b", "x", `{}`}}},
		{name: "no index, no id, new name starts a call", deltas: []openai.ToolCall{
			delta(nil, "", "x", `{"q":1}`), delta(nil, "", "y", `{}`),
		}, want: []call{{"", "x", `{"q":1}`}, {"", "y", `{}`}}},
		{name: "no index, no id, same tool twice with the name resent", deltas: []openai.ToolCall{
			delta(nil, "", "x", `{"q":`), delta(nil, "", "x", `1}`), delta(nil, "", "x", ""), delta(nil, "", "x", `{"q":2}`),
		}, want: []call{{"", "x", `{"q":1}`}, {"", "x", `{"q":2}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a callAccumulator
			for _, d := range tt.deltas {
				a.add(d)
			}
			if len(a.calls) != len(tt.want) {
				t.Fatalf("got %d calls %+v, want %d", len(a.calls), a.calls, len(tt.want))
			}
			for i, w := range tt.want {
				got := a.calls[i]
				if got.ID != w.id || got.Name != w.name || got.Arguments != w.args {
					t.Errorf("call %d = %q %q %q, want %q %q %q", i, got.ID, got.Name, got.Arguments, w.id, w.name, w.args)
				}
			}
		})
	}
}

func TestExtrasFromStream(t *testing.T) {
	// OpenRouter: text pieces then the signature alone, same index: one item.
	// Gemini: a repeated id and no index; DeepSeek: cache hits apart.
	raw := `: OPENROUTER PROCESSING

data: {"choices":[{"index":0,"delta":{"reasoning":"a","reasoning_details":[{"type":"reasoning.text","text":"a","index":0}]}}]}

data: {"choices":[{"index":0,"delta":{"reasoning":"b","reasoning_details":[{"type":"reasoning.text","text":"b","index":0}]}}]}

data: {"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","signature":"S","index":0}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x","extra_content":{"google":{"thought_signature":"G1"}}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x","extra_content":{"google":{"thought_signature":"G2"}}}]}}]}

data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"prompt_cache_hit_tokens":8}}

data: [DONE]
`
	x := parseExtras([]byte(raw), true)
	msg := llm.Message{ToolCalls: []llm.ToolCall{{ID: "x"}, {ID: "x"}}}
	x.apply(&msg)
	if msg.ReasoningContent != "ab" {
		t.Errorf("reasoning %q, want ab", msg.ReasoningContent)
	}
	if got := string(msg.ReasoningDetails); got != `[{"index":0,"signature":"S","text":"ab","type":"reasoning.text"}]` {
		t.Errorf("details %s", got)
	}
	if msg.ToolCalls[0].ThoughtSignature != "G1" || msg.ToolCalls[1].ThoughtSignature != "G2" {
		t.Errorf("signatures %q %q, want G1 G2", msg.ToolCalls[0].ThoughtSignature, msg.ToolCalls[1].ThoughtSignature)
	}
	if x.cacheHit != 8 {
		t.Errorf("cache hits %d, want 8", x.cacheHit)
	}
}
