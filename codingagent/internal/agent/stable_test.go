package agent

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
	"github.com/codeagent/codeagent/internal/tools"
)

// stableTurns is the length of the long task: the scripted session's turns
// (read, edit, command, look-up, re-read over 20 files of ~5 000 chars),
// then the final answer.
const stableTurns = 70

// Anthropic's prices relative to the input price: cache writes 1.25x,
// cache reads 0.1x, output 5x (Claude Sonnet: $3 in, $15 out per million).
const (
	priceIn         = 3.0 / 1e6
	priceOut        = 15.0 / 1e6
	priceCacheWrite = 1.25 * priceIn
	priceCacheRead  = 0.1 * priceIn
)

// billed is what the fake billed for a whole task, priced like Anthropic.
func billed(us []anthropictest.Usage) (cost float64, prompt, read int) {
	for _, u := range us {
		cost += float64(u.Input)*priceIn + float64(u.CacheWrite)*priceCacheWrite +
			float64(u.CacheRead)*priceCacheRead + float64(u.Output)*priceOut
		prompt += u.Input + u.CacheWrite + u.CacheRead
		read += u.CacheRead
	}
	return cost, prompt, read
}

// anthropicTask runs the scripted turns as a real task: the agent's loop
// and request shaping, the real tools on real files, the real Anthropic
// client against the strict fake, which bills like Anthropic.
func anthropicTask(tb testing.TB, noCache, eachTurn bool) (*Agent, *anthropictest.Server) {
	tb.Helper()
	dir := tb.TempDir()
	writeScriptFiles(tb, dir)
	replies := make([]anthropictest.Reply, 0, stableTurns+1)
	for turn := range stableTurns {
		c := scriptTurn(turn)
		raw, err := json.Marshal(c.args)
		if err != nil {
			tb.Fatal(err)
		}
		replies = append(replies, anthropictest.Reply{Text: fmt.Sprintf("Step %d.", turn),
			Calls: []anthropictest.Call{{Name: c.name, Input: string(raw)}}})
	}
	replies = append(replies, anthropictest.Reply{Text: "Every helper is reworked."})
	srv := anthropictest.New(tb, replies...)
	client := llmclient.New(llmclient.Config{API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: srv.URL, APIKey: "test-key", Model: "claude-test",
		MaxTokens: 8192, NoPromptCache: noCache, BackoffBase: time.Millisecond})
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := New(Options{Client: client, Tools: tools.Coding(ws, tools.Options{ShellTimeout: time.Minute}),
		Workspace: ws, Model: "claude-test"})
	if err != nil {
		tb.Fatal(err)
	}
	a.reshapeEachTurn = eachTurn
	res, err := a.RunTask(tb.Context(), Task{ID: "script", Title: "Rework the helpers",
		Description: "Rework the helpers of every file, checking each change."})
	if err != nil || res.Status != Completed {
		tb.Fatalf("task: %v %+v (fake: %q)", err, res, srv.Rejections())
	}
	if n := len(srv.Bodies()); n != stableTurns+1 {
		tb.Fatalf("%d requests, want %d", n, stableTurns+1)
	}
	return a, srv
}

// prefixBreaks returns the requests (by index) whose system prompt or
// messages do not start with the previous request's, byte for byte once
// the cache_control markers (which move with the end by design) are gone.
func prefixBreaks(tb testing.TB, bodies [][]byte) []int {
	tb.Helper()
	var breaks []int
	var prevSystem string
	var prevMsgs []string
	for i, body := range bodies {
		var req struct {
			System   any   `json:"system"`
			Messages []any `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			tb.Fatal(err)
		}
		system := canonicalWire(tb, req.System)
		msgs := make([]string, len(req.Messages))
		for j, m := range req.Messages {
			msgs[j] = canonicalWire(tb, m)
		}
		if i > 0 && !extends(prevSystem, prevMsgs, system, msgs) {
			breaks = append(breaks, i)
		}
		prevSystem, prevMsgs = system, msgs
	}
	return breaks
}

func extends(system string, msgs []string, nextSystem string, next []string) bool {
	if system != nextSystem || len(next) < len(msgs) {
		return false
	}
	for j, m := range msgs {
		if next[j] != m {
			return false
		}
	}
	return true
}

// canonicalWire is v as JSON without cache_control keys.
func canonicalWire(tb testing.TB, v any) string {
	tb.Helper()
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "cache_control")
			for k, e := range x {
				x[k] = strip(e)
			}
		case []any:
			for i, e := range x {
				x[i] = strip(e)
			}
		}
		return v
	}
	b, err := json.Marshal(strip(v))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestRequestPrefixStable: over a long task, each request starts with the
// previous one byte for byte except at the rare reshapes, which the agent
// counts, and so the prompt cache serves most of what is sent; the task
// then costs at most 0.35 of what it costs without the cache.
func TestRequestPrefixStable(t *testing.T) {
	if testing.Short() {
		t.Skipf("slow: a %d-turn scripted task, with and without the prompt cache (make test runs it)", stableTurns)
	}
	a, srv := anthropicTask(t, false, false)
	breaks := prefixBreaks(t, srv.Bodies())
	t.Logf("%d requests, prefix rewritten before requests %v", len(srv.Bodies()), breaks)
	if got, want := len(breaks), a.stable.reshapes-1; got != want {
		t.Errorf("%d requests rewrote the prefix, but the agent reshaped %d times after the first request", got, want)
	}
	if len(breaks) > stableTurns/10 {
		t.Errorf("the prefix was rewritten %d times in %d requests, want at most %d", len(breaks), stableTurns+1, stableTurns/10)
	}
	if len(breaks) == 0 {
		t.Errorf("never reshaped in %d turns: older results are never condensed", stableTurns)
	}
	cost, prompt, read := billed(srv.Usages())
	_, noCache := anthropicTask(t, true, false)
	base, basePrompt, _ := billed(noCache.Usages())
	ratio := cost / base
	t.Logf("cost with caching $%.4f (%d of %d prompt tokens read from the cache), without $%.4f (%d prompt tokens): ratio %.3f",
		cost, read, prompt, base, basePrompt, ratio)
	if ratio > 0.35 {
		t.Errorf("cost ratio %.3f, goal <= 0.35", ratio)
	}
}

// BenchmarkAgentPromptCaching reports the cost of the long scripted task,
// shaped by the agent and billed like Anthropic, with prompt caching as a
// fraction of its cost without (cost-ratio); the same for the shaping of
// every request afresh (each-turn-cost-ratio), and the task's cost with
// caching against that older shaping's (cost-vs-each-turn).
func BenchmarkAgentPromptCaching(b *testing.B) {
	var stable, stableBase, each, eachBase float64
	var reshapes, tokens, eachTokens int
	for b.Loop() {
		a, srv := anthropicTask(b, false, false)
		stable, tokens, _ = billed(srv.Usages())
		reshapes = a.stable.reshapes
		_, srv = anthropicTask(b, true, false)
		stableBase, _, _ = billed(srv.Usages())
		_, srv = anthropicTask(b, false, true)
		each, eachTokens, _ = billed(srv.Usages())
		_, srv = anthropicTask(b, true, true)
		eachBase, _, _ = billed(srv.Usages())
	}
	b.ReportMetric(stable/stableBase, "cost-ratio")
	b.ReportMetric(each/eachBase, "each-turn-cost-ratio")
	b.ReportMetric(stable/each, "cost-vs-each-turn")
	b.ReportMetric(float64(reshapes), "reshapes")
	b.ReportMetric(float64(tokens), "prompt-tokens")
	b.ReportMetric(float64(eachTokens), "each-turn-prompt-tokens")
}
