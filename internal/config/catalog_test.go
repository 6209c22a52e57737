package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/catalog"
)

// noCatalog is a catalog that knows no model: tests of the plain defaults.
func noCatalog(string, string) (catalog.Model, bool) { return catalog.Model{}, false }

// The embedded catalog fills the window, a reserved output above the
// model's maximum and the cache-aware prices the config leaves unset, and
// says so in Sources; what the config sets wins, field by field.
func TestCatalogFillsUnsetFields(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	l, err := Load(Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": "https://api.anthropic.com/v1", "OPENAI_MODEL": "claude-haiku-4-5-20251001"})})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := catalog.Lookup("https://api.anthropic.com/v1", "claude-haiku-4-5-20251001")
	if !ok {
		t.Fatal("the catalog lacks claude-haiku-4-5-20251001")
	}
	if l.ContextWindow != m.ContextWindow || l.Sources["context_window"] != "catalog: anthropic/claude-haiku-4-5-20251001" {
		t.Errorf("context_window %d from %q, want %d from the catalog", l.ContextWindow, l.Sources["context_window"], m.ContextWindow)
	}
	if m.MaxOutput < 8192 && (l.ReservedOutput != m.MaxOutput || !strings.HasPrefix(string(l.Sources["reserved_output"]), "catalog: ")) {
		t.Errorf("reserved_output %d from %q, want the model's max output %d", l.ReservedOutput, l.Sources["reserved_output"], m.MaxOutput)
	}
	p, ok := l.PriceOf("claude-haiku-4-5-20251001")
	if !ok || p.Input != m.Price.Input || p.CachedInput != m.Price.CachedInput || p.CacheWrite != m.Price.CacheWrite || p.CacheWrite == p.Input {
		t.Errorf("price %+v, want the catalog's %+v with its own cache write price", p, m.Price)
	}
	if l.Sources["prices"] != "catalog: anthropic/claude-haiku-4-5-20251001" {
		t.Errorf("Sources[prices] = %q", l.Sources["prices"])
	}
	var out bytes.Buffer
	if err := l.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"catalog: anthropic/claude-haiku-4-5-20251001", "cache write $", "reasoning yes", catalog.Version} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("config display lacks %q:\n%s", want, out.String())
		}
	}

	// The config overrides any field; other models keep the file's source.
	file := filepath.Join(dir, "codeagent.yaml")
	body := "context_window: 50000\nprices:\n  claude-haiku-4-5-20251001: {input: 1, output: 2}\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = Load(Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": "https://api.anthropic.com/v1", "OPENAI_MODEL": "claude-haiku-4-5-20251001"})})
	if err != nil {
		t.Fatal(err)
	}
	if l.ContextWindow != 50000 || !strings.HasPrefix(string(l.Sources["context_window"]), "file (") {
		t.Errorf("context_window %d from %q, want the file's 50000", l.ContextWindow, l.Sources["context_window"])
	}
	if p, _ := l.PriceOf("claude-haiku-4-5-20251001"); p != (Price{Input: 1, Output: 2, CachedInput: 1, CacheWrite: 1}) {
		t.Errorf("price %+v, want the file's", p)
	}

	// A local server is not looked up: its window is what it serves.
	_, err = Load(Options{File: filepath.Join(dir, "none.yaml"), Getenv: env(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_MODEL": "gpt-4o"})})
	if err == nil {
		t.Fatal("a missing explicit --config file loaded")
	}
	os.Remove(file)
	l, err = Load(Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_MODEL": "gpt-4o"})})
	if err != nil {
		t.Fatal(err)
	}
	if l.Sources["context_window"] != SourceDefault || len(l.Prices) != 0 {
		t.Errorf("a local server took catalog values: window from %q, prices %v", l.Sources["context_window"], l.Prices)
	}
}

func TestPricesWithCache(t *testing.T) {
	p := filepath.Join(t.TempDir(), "codeagent.yaml")
	body := "prices:\n  m1: {input: 3, output: 15, cached_input: 0.3, cache_write: 3.75}\n  m2: {input: 1, output: 2, cached_input: 0}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{File: p, Getenv: env(nil), Catalog: noCatalog})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Prices["m1"]; got != (Price{Input: 3, Output: 15, CachedInput: 0.3, CacheWrite: 3.75}) {
		t.Errorf("m1 = %+v", got)
	}
	if got := l.Prices["m2"]; got != (Price{Input: 1, Output: 2, CachedInput: 0, CacheWrite: 1}) {
		t.Errorf("m2 = %+v (an explicit 0 is free, a missing one the input price)", got)
	}
}

// reasoning_effort and thinking_budget come from flag/env/file with their
// source; bad values are refused naming the key; for a model the catalog
// says does not reason neither is sent, and config says why.
func TestReasoningSettings(t *testing.T) {
	t.Chdir(t.TempDir())
	reasons := func(reasoning bool) func(string, string) (catalog.Model, bool) {
		return func(string, model string) (catalog.Model, bool) {
			return catalog.Model{Provider: "openai", ID: model, Reasoning: reasoning}, true
		}
	}
	vars := map[string]string{"OPENAI_MODEL": "o-test", "CODEAGENT_REASONING_EFFORT": "high", "CODEAGENT_THINKING_BUDGET": "2048"}
	l, err := Load(Options{Getenv: env(vars), Catalog: reasons(true)})
	if err != nil {
		t.Fatal(err)
	}
	if l.ReasoningEffort != "high" || l.Sources["reasoning_effort"] != "env CODEAGENT_REASONING_EFFORT" || l.ThinkingBudget != 2048 {
		t.Errorf("effort %q from %q, budget %d", l.ReasoningEffort, l.Sources["reasoning_effort"], l.ThinkingBudget)
	}
	if got := AgentEnv(&l.Config)["CODEAGENT_REASONING_EFFORT"]; got != "high" {
		t.Errorf("the coding agent's environment carries effort %q", got)
	}

	l, err = Load(Options{Getenv: env(vars), Catalog: reasons(false)})
	if err != nil {
		t.Fatal(err)
	}
	if l.ReasoningEffort != "" || l.ThinkingBudget != 0 || len(l.Warnings) == 0 {
		t.Errorf("a model that does not reason gets effort %q, budget %d (warnings %q)", l.ReasoningEffort, l.ThinkingBudget, l.Warnings)
	}
	var out bytes.Buffer
	if err := l.Print(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "catalog: openai/o-test does not reason: not sent") {
		t.Errorf("config does not say why no effort is sent:\n%s", out.String())
	}

	for key, bad := range map[string]string{"CODEAGENT_REASONING_EFFORT": "extreme", "CODEAGENT_THINKING_BUDGET": "100000"} {
		_, err := Load(Options{Getenv: env(map[string]string{"OPENAI_MODEL": "o-test", key: bad}), Catalog: reasons(true)})
		if err == nil || !strings.Contains(err.Error(), strings.ToLower(strings.TrimPrefix(key, "CODEAGENT_"))) {
			t.Errorf("%s=%s: err = %v, want one naming the key", key, bad, err)
		}
	}
}
