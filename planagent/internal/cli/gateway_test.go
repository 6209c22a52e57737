package cli

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/config"
)

// The agents see only the gateway's URL: the wire API and the provider
// profile the real base URL decides are pinned in their settings, the key
// leaves them, and the gateway goes where the agents' client would have.
func TestModelGatewayPinsWhatTheBaseURLDecides(t *testing.T) {
	for _, tc := range []struct {
		name, base, api, model string
		compat                 map[string]string
		wantAPI, wantProfile   string
		wantPath               string
	}{
		{name: "openai", base: "https://api.openai.com/v1", model: "gpt-4o", wantAPI: "chat", wantProfile: "openai", wantPath: "/v1"},
		{name: "codex on responses", base: "https://api.openai.com/v1", model: "gpt-5-codex", wantAPI: "responses", wantProfile: "openai", wantPath: "/v1"},
		{name: "anthropic host", base: "https://api.anthropic.com/v1", model: "claude-sonnet-4-5", wantAPI: "anthropic", wantPath: "/v1"},
		{name: "anthropic on the default url", base: "https://api.openai.com/v1", api: "anthropic", model: "claude-sonnet-4-5", wantAPI: "anthropic", wantPath: "/v1"},
		{name: "ollama on loopback", base: "http://127.0.0.1:11434/v1", model: "qwen", wantAPI: "chat", wantPath: "/v1"},
		{name: "forced profile kept", base: "http://10.0.0.5:8000/v1", model: "m", compat: map[string]string{"profile": "mistral"}, wantAPI: "chat", wantProfile: "mistral", wantPath: "/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{cfg: config.Config{BaseURL: tc.base, API: tc.api, Model: tc.model, APIKey: "sk-real", Compat: tc.compat},
				logger: slog.New(slog.DiscardHandler)}
			env := map[string]string{config.APIKeyEnv: "sk-real", config.AnthropicKeyEnv: "sk-real", "OPENAI_BASE_URL": tc.base}
			gw, err := s.modelGateway(env)
			if err != nil || gw == nil {
				t.Fatalf("modelGateway: %v", err)
			}
			t.Cleanup(func() { _ = gw.Close() })
			if _, ok := env[config.APIKeyEnv]; ok {
				t.Error("the key stayed in the agents' settings")
			}
			if _, ok := env[config.AnthropicKeyEnv]; ok {
				t.Error("the anthropic key stayed in the agents' settings")
			}
			if env["CODEAGENT_API"] != tc.wantAPI {
				t.Errorf("api %q, want %q", env["CODEAGENT_API"], tc.wantAPI)
			}
			if !strings.Contains(env[config.EnvCompat], "profile=") ||
				(tc.wantProfile != "" && !strings.Contains(env[config.EnvCompat], "profile="+tc.wantProfile)) {
				t.Errorf("compat %q, want profile %q pinned", env[config.EnvCompat], tc.wantProfile)
			}
			if gw.Path() != tc.wantPath {
				t.Errorf("gateway path %q, want %q", gw.Path(), tc.wantPath)
			}
		})
	}
	s := &session{cfg: config.Config{BaseURL: "https://api.openai.com/v1"}, logger: slog.New(slog.DiscardHandler)}
	if gw, err := s.modelGateway(map[string]string{}); gw != nil || err != nil {
		t.Errorf("without a key: %v, %v; want no gateway", gw, err)
	}
}

// The gateway goes where the agents' client would have: Anthropic's host
// for the anthropic api on OpenAI's default base URL, else the base URL.
func TestGatewayUpstream(t *testing.T) {
	for _, tc := range []struct{ api, base, want string }{
		{"anthropic", "https://api.openai.com/v1", "https://api.anthropic.com/v1"},
		{"anthropic", "https://proxy.example/v1", "https://proxy.example/v1"},
		{"chat", "https://api.openai.com/v1", "https://api.openai.com/v1"},
	} {
		if got := gatewayUpstream(tc.api, tc.base); got != tc.want {
			t.Errorf("gatewayUpstream(%s, %s) = %s, want %s", tc.api, tc.base, got, tc.want)
		}
	}
}
