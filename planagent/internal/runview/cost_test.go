package runview

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// One test per cost rule: cached tokens at the cached price and written
// ones at the cache write price, each taken out of the prompt (never
// billed twice); the server's own figure wins over any price, and prices
// a model the config has no price for.
func TestCostRules(t *testing.T) {
	// Anthropic-like: input 3, output 15, read 0.3 (0.1×), write 3.75 (1.25×).
	p := Prices{"m": {Input: 3, Output: 15, CachedInput: 0.3, CacheWrite: 3.75}}
	tests := []struct {
		name  string
		model string
		t     Tokens
		want  float64
		ok    bool
	}{
		{"no cache", "m", Tokens{Prompt: 1_000_000, Completion: 100_000}, 3 + 1.5, true},
		{"cache read", "m", Tokens{Prompt: 1_000_000, Cached: 900_000}, 0.1*3 + 0.9*0.3, true},
		{"cache write", "m", Tokens{Prompt: 1_000_000, CacheWrite: 1_000_000}, 3.75, true},
		{"read and write", "m", Tokens{Prompt: 1_000_000, Cached: 500_000, CacheWrite: 250_000, Completion: 1000},
			0.25*3 + 0.5*0.3 + 0.25*3.75 + 0.001*15, true},
		// OpenAI reports cached tokens inside prompt_tokens: 1M prompt with
		// 800k cached is 200k at input and 800k at the cached price, not
		// 1M at input plus 800k again.
		{"no double count", "m", Tokens{Prompt: 1_000_000, Cached: 800_000}, 0.2*3 + 0.8*0.3, true},
		{"server cost wins", "m", Tokens{Prompt: 1_000_000, Completion: 1000, ServerCostUSD: 0.42}, 0.42, true},
		{"server cost without a price", "unpriced", Tokens{Prompt: 10, ServerCostUSD: 0.0001}, 0.0001, true},
		{"no price", "unpriced", Tokens{Prompt: 10}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := p.Cost(tt.model, tt.t)
			if ok != tt.ok || !near(got, tt.want) {
				t.Errorf("Cost = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The view prices each task and the run from what the reports and the
// planner's usage carried: cache figures and the server's cost included.
func TestBuildCacheAwareCost(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &planspec.Plan{Title: "T", Tasks: []planspec.Task{{ID: "a", Description: "a"}, {ID: "b", Description: "b"}}}
	st, err := runrecord.NewState("r1", "goal", p, tokens.Usage{Prompt: 1_000_000, Cached: 1_000_000}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Info["a"] = &runrecord.TaskInfo{Tokens: protocol.Tokens{Prompt: 1_000_000, Cached: 600_000, CacheWrite: 400_000}}
	st.Info["b"] = &runrecord.TaskInfo{Tokens: protocol.Tokens{Prompt: 5, Completion: 5, CostUSD: 0.25}}
	r := Build(st, Options{Model: "m", Prices: Prices{"m": {Input: 1, Output: 2, CachedInput: 0.1, CacheWrite: 1.25}}})
	byID := map[string]Task{}
	for _, tk := range r.Tasks {
		byID[tk.ID] = tk
	}
	if c := byID["a"].CostUSD; c == nil || !near(*c, 0.6*0.1+0.4*1.25) {
		t.Errorf("task a cost %v, want %v", c, 0.6*0.1+0.4*1.25)
	}
	if c := byID["b"].CostUSD; c == nil || !near(*c, 0.25) {
		t.Errorf("task b cost %v, want the server's 0.25", c)
	}
	if byID["a"].Tokens.Cached != 600_000 || byID["a"].Tokens.CacheWrite != 400_000 {
		t.Errorf("task a tokens %+v lost the cache figures", byID["a"].Tokens)
	}
	// The planner's 1M prompt tokens all came from the cache: $0.10.
	if want := 0.1 + 0.6*0.1 + 0.4*1.25 + 0.25; r.CostUSD == nil || !near(*r.CostUSD, want) {
		t.Errorf("run cost %v, want %v (the parts' sum)", r.CostUSD, want)
	}
}

// A task's sub-agents are priced apart (the cache-aware rules, the
// server's figure), shown in the view that status --json and the web view
// render, and listed in the summary; they stay part of the task's cost.
func TestSubagentCost(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &planspec.Plan{Title: "T", Tasks: []planspec.Task{{ID: "a", Description: "a"}}}
	st, err := runrecord.NewState("r1", "goal", p, tokens.Usage{}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Info["a"] = &runrecord.TaskInfo{Tokens: protocol.Tokens{Prompt: 3_000_000, Completion: 100_000, Cached: 1_000_000},
		Subagents: []runrecord.Subagent{
			{Attempt: 1, ID: "a.sub1", Goal: "Map the | router", Tokens: protocol.Tokens{Prompt: 1_000_000, Cached: 1_000_000}},
			{Attempt: 2, ID: "a.sub1", Goal: "Write the tests", Tokens: protocol.Tokens{Prompt: 5, Completion: 5, CostUSD: 0.25}},
		}}
	r := Build(st, Options{Model: "m", Prices: Prices{"m": {Input: 1, Output: 2, CachedInput: 0.1, CacheWrite: 1.25}}})
	subs := r.Tasks[0].Subagents
	if len(subs) != 2 || subs[0].ID != "a.sub1" || subs[0].Attempt != 1 || subs[1].Attempt != 2 || subs[1].Goal != "Write the tests" {
		t.Fatalf("sub-agents %+v", subs)
	}
	if c := subs[0].CostUSD; c == nil || !near(*c, 0.1) {
		t.Errorf("sub-agent 1 cost %v, want 0.1 (1M tokens read from the cache)", c)
	}
	if c := subs[1].CostUSD; c == nil || !near(*c, 0.25) {
		t.Errorf("sub-agent 2 cost %v, want the server's 0.25", c)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"subagents":[{"id":"a.sub1","attempt":1,"goal":"Map the | router","tokens":{"prompt":1000000,"completion":0,"total":1000000,"cached":1000000},"cost_usd":0.1`) {
		t.Errorf("status --json lacks the sub-agents: %s", raw)
	}
	md := Markdown(r)
	for _, want := range []string{"| a.sub1 | 1 | Map the \\| router | 1000000/0 | $0.1000 |", "| a.sub1 | 2 | Write the tests | 5/5 | $0.2500 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}
