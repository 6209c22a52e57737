package llmclient_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// The server's own cost reaches Usage: OpenRouter's usage.cost (in the
// body, streamed or not) and LiteLLM's x-litellm-response-cost header;
// OpenRouter's cache_write_tokens too. Cached tokens stay inside Prompt,
// as OpenAI reports them, so nothing counts them twice.
func TestServerReportedCost(t *testing.T) {
	cost := 0.00123
	tests := []struct {
		name  string
		reply llmtest.Reply
		want  llm.Usage
	}{
		{"openrouter usage.cost", llmtest.Reply{Content: "ok", Usage: &llmtest.Usage{PromptTokens: 1000, CompletionTokens: 10, TotalTokens: 1010,
			PromptTokensDetails: &llmtest.PromptTokensDetails{CachedTokens: 600, CacheWriteTokens: 300}, Cost: &cost}},
			llm.Usage{Prompt: 1000, Completion: 10, Cached: 600, CacheWrite: 300, CostUSD: cost}},
		{"litellm header", llmtest.Reply{Content: "ok", Header: map[string]string{"x-litellm-response-cost": "0.0042"},
			Usage: &llmtest.Usage{PromptTokens: 100, CompletionTokens: 5, TotalTokens: 105}},
			llm.Usage{Prompt: 100, Completion: 5, CostUSD: 0.0042}},
		{"openai cached tokens", llmtest.Reply{Content: "ok", Usage: &llmtest.Usage{PromptTokens: 2000, CompletionTokens: 20, TotalTokens: 2020,
			PromptTokensDetails: &llmtest.PromptTokensDetails{CachedTokens: 1536}}},
			llm.Usage{Prompt: 2000, Completion: 20, Cached: 1536}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				srv := llmtest.New(t)
				srv.Enqueue(tt.reply)
				c := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "k", Model: "m"})
				resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Stream: stream}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Usage != tt.want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, tt.want)
				}
				if c.Usage() != tt.want {
					t.Errorf("client total = %+v, want %+v", c.Usage(), tt.want)
				}
			})
		}
	}
}

// DeepSeek names its cached prompt tokens prompt_cache_hit_tokens (inside
// prompt_tokens); the answer's shape is DeepSeek's documented example
// (api-docs.deepseek.com, chat completion response), not a recording.
func TestDeepSeekCacheHitTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"deepseek-chat",
"choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],
"usage":{"prompt_tokens":1200,"completion_tokens":10,"total_tokens":1210,"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":176}}`)
	}))
	defer srv.Close()
	c := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "k", Model: "deepseek-chat"})
	resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (llm.Usage{Prompt: 1200, Completion: 10, Cached: 1024}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}
