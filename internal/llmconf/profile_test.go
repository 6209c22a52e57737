package llmconf_test

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmconf"
)

func TestProfileFromBaseURL(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://api.openai.com/v1", "openai"},
		{"https://myres.openai.azure.com/openai/deployments/x", "azure"},
		{"https://api.deepseek.com", "deepseek"},
		{"https://api.moonshot.ai/v1", "moonshot"},
		{"https://api.z.ai/api/paas/v4", "zai"},
		{"https://api.x.ai/v1", "xai"},
		{"https://api.groq.com/openai/v1", "groq"},
		{"https://api.mistral.ai/v1", "mistral"},
		{"https://openrouter.ai/api/v1", "openrouter"},
		{"https://ai-gateway.vercel.sh/v1", "vercel"},
		{"https://api.together.xyz/v1", "together"},
		{"https://router.huggingface.co/v1", "huggingface"},
		{"https://api.fireworks.ai/inference/v1", "fireworks"},
		{"https://api.cerebras.ai/v1", "cerebras"},
		{"https://generativelanguage.googleapis.com/v1beta/openai/", "gemini"},
		{"http://localhost:11434/v1", "ollama"},
		{"http://ollama:11434/v1", "ollama"},
		{"http://127.0.0.1:8000/v1", "vllm"},
		{"http://localhost:8080/v1", "llamacpp"},
		{"http://192.168.1.5:1234/v1", "lmstudio"},
		{"http://litellm:4000", "litellm"},
		{"https://example.com:8080/v1", "default"}, // a port means something only on a local host
		{"http://127.0.0.1:40123/v1", "default"},
	}
	for _, tt := range tests {
		p, fields, err := llmconf.ResolveProfile(tt.url, nil, "")
		if err != nil || p.Name != tt.want {
			t.Errorf("%s: profile %q (%v), want %q", tt.url, p.Name, err, tt.want)
			continue
		}
		if fields[0].Key != "profile" || !strings.HasPrefix(fields[0].Source, "profile "+tt.want) {
			t.Errorf("%s: first field %+v, want the profile and why", tt.url, fields[0])
		}
	}
}
