package llmconf_test

import (
	"testing"

	"github.com/codeagent/codeagent/internal/llmconf"
)

func TestResolveAPI(t *testing.T) {
	for _, tc := range []struct{ api, url, model, want string }{
		{"", "https://api.openai.com/v1", "gpt-4o-mini", llmconf.APIChat},
		{"auto", "https://api.anthropic.com/v1", "claude-sonnet-4-5", llmconf.APIAnthropic},
		{"", "https://api.openai.com/v1", "gpt-5.1-codex-mini", llmconf.APIResponses},
		{"", "https://openrouter.ai/api/v1", "openai/gpt-5-codex", llmconf.APIChat},
		{"chat", "https://api.anthropic.com/v1", "claude", llmconf.APIChat},
		{"responses", "http://localhost:8080/v1", "x", llmconf.APIResponses},
	} {
		got, why, err := llmconf.ResolveAPI(tc.api, tc.url, tc.model)
		if err != nil || got != tc.want || why == "" {
			t.Errorf("ResolveAPI(%q, %q, %q) = %q, %q, %v; want %q", tc.api, tc.url, tc.model, got, why, err, tc.want)
		}
	}
	if _, _, err := llmconf.ResolveAPI("gemini", "", ""); err == nil {
		t.Error("an unknown api was accepted")
	}
}
