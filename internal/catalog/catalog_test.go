package catalog_test

import (
	"testing"

	"github.com/codeagent/codeagent/internal/catalog"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name, baseURL, model string
		want                 string // Name(); "" for no entry
	}{
		{"openai", "https://api.openai.com/v1", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"anthropic", "https://api.anthropic.com/v1", "claude-sonnet-4-20250514", "anthropic/claude-sonnet-4-20250514"},
		{"openrouter", "https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4", "openrouter/anthropic/claude-sonnet-4"},
		{"gateway: maker first", "https://litellm.example.com/v1", "gpt-4o", "openai/gpt-4o"},
		{"gateway: aggregator id", "https://gw.example.com/v1", "openai/gpt-4o", "openrouter/openai/gpt-4o"},
		{"gateway: litellm prefix", "https://gw.example.com/v1", "azure/gpt-4o", "openai/gpt-4o"},
		{"known host, unknown model", "https://api.openai.com/v1", "my-finetune", ""},
		{"local server", "http://127.0.0.1:11434/v1", "gpt-4o", ""},
		{"private network", "http://192.168.1.20:8000/v1", "gpt-4o", ""},
		{"container alias", "http://host.docker.internal:8080/v1", "gpt-4o", ""},
		{"bare host name", "http://vllm:8000/v1", "gpt-4o", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := catalog.Lookup(tt.baseURL, tt.model)
			got := ""
			if ok {
				got = m.Name()
			}
			if got != tt.want {
				t.Fatalf("Lookup(%s, %s) = %q, want %q", tt.baseURL, tt.model, got, tt.want)
			}
		})
	}
}

// The catalog's cache fields are read the right way round: Anthropic
// bills a cache write at 1.25× input and a read at 0.1×.
func TestLookupCachePrices(t *testing.T) {
	m, ok := catalog.Lookup("https://api.anthropic.com/v1", "claude-sonnet-4-20250514")
	if !ok {
		t.Fatal("no entry")
	}
	p := m.Price
	if p.Input != 3 || p.Output != 15 || p.CacheWrite != 3.75 || p.CachedInput != 0.3 {
		t.Errorf("price = %+v, want input 3, output 15, cache write 3.75, cached input 0.3", p)
	}
	if m.ContextWindow != 200000 || m.MaxOutput <= 0 || !m.Reasoning || !m.Priced {
		t.Errorf("model = %+v", m)
	}
	for model, cached := range map[string]float64{"gpt-4o-mini": 0.075, "gpt-5.4": 0.25} {
		o, _ := catalog.Lookup("https://api.openai.com/v1", model)
		if o.Price.CachedInput != cached || o.Price.CacheWrite != o.Price.Input {
			t.Errorf("%s price = %+v, want cached input %g and no separate write price", model, o.Price, cached)
		}
	}
}

// An undated name or "-latest" is the newest dated entry of that name, as
// the providers resolve it; a name that is only a prefix is not.
func TestAliases(t *testing.T) {
	for _, c := range []struct{ model, want string }{
		{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929"},
		{"claude-sonnet-4-5-latest", "claude-sonnet-4-5-20250929"},
		{"claude-haiku-4-5", "claude-haiku-4-5-20251001"},
		{"claude-opus-4-1", "claude-opus-4-1-20250805"},
		{"CLAUDE-OPUS-4-5", "claude-opus-4-5-20251101"},
	} {
		m, ok := catalog.Lookup("https://api.anthropic.com/v1", c.model)
		if !ok || m.ID != c.want || !m.Priced || m.ContextWindow == 0 {
			t.Errorf("%s: %+v %v, want %s with prices and a window", c.model, m, ok, c.want)
		}
	}
	for _, model := range []string{"claude-sonnet", "claude-sonnet-4-5-2025", "claude-sonnet-4-5-x"} {
		if m, ok := catalog.Lookup("https://api.anthropic.com/v1", model); ok {
			t.Errorf("%s resolved to %s", model, m.ID)
		}
	}
}
