package llmclient_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
)

// cacheTurns is the length of the scripted task: 29 tool calls, then the
// final answer.
const cacheTurns = 30

// Anthropic's prices relative to the input price: cache writes 1.25x,
// cache reads 0.1x, output 5x (Claude Sonnet: $3 in, $15 out per million).
const (
	priceIn         = 3.0 / 1e6
	priceOut        = 15.0 / 1e6
	priceCacheWrite = 1.25 * priceIn
	priceCacheRead  = 0.1 * priceIn
)

// cost prices a usage as Anthropic bills it; Prompt counts the cached and
// cache-write tokens too.
func cost(u llm.Usage) float64 {
	plain := u.Prompt - u.Cached - u.CacheWrite
	return float64(plain)*priceIn + float64(u.CacheWrite)*priceCacheWrite +
		float64(u.Cached)*priceCacheRead + float64(u.Completion)*priceOut
}

// cachedTask runs the scripted 30-turn task against a fresh fake and
// returns what the client metered.
func cachedTask(tb testing.TB, noCache bool) llm.Usage {
	tb.Helper()
	replies := make([]anthropictest.Reply, 0, cacheTurns)
	for i := range cacheTurns - 1 {
		replies = append(replies, anthropictest.Reply{
			Text:  fmt.Sprintf("Step %d: reading the next file.", i),
			Calls: []anthropictest.Call{{Name: "read_file", Input: fmt.Sprintf(`{"path":"pkg/file%02d.go"}`, i)}},
		})
	}
	replies = append(replies, anthropictest.Reply{Text: "All files read; the fix is in pkg/file07.go."})
	s := anthropictest.New(tb, replies...)
	c := llmclient.New(llmclient.Config{
		API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: s.URL, APIKey: testKey, Model: "claude-bench",
		MaxTokens: 8192, NoPromptCache: noCache, BackoffBase: time.Millisecond,
	})
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: benchSystem},
		{Role: llm.RoleUser, Content: "Find and fix the bug in pkg/."},
	}
	for turn := 0; ; turn++ {
		resp, err := c.Chat(tb.Context(), llm.Request{Messages: msgs, Tools: benchTools, Stream: true}, nil)
		if err != nil {
			tb.Fatalf("turn %d: %v (fake: %q)", turn, err, s.Rejections())
		}
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			break
		}
		for _, tc := range resp.Message.ToolCalls {
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: benchFile(turn)})
		}
	}
	if n := len(s.Bodies()); n != cacheTurns {
		tb.Fatalf("%d requests, want %d", n, cacheTurns)
	}
	return c.Usage()
}

// TestPromptCachingCost holds the benchmark's goal in the ordinary suite:
// with the breakpoints, the task costs at most 0.35 of what it costs
// without them.
func TestPromptCachingCost(t *testing.T) {
	with, without := cachedTask(t, false), cachedTask(t, true)
	if without.Cached+without.CacheWrite != 0 {
		t.Fatalf("the baseline used the cache: %+v", without)
	}
	if with.Prompt != without.Prompt {
		t.Errorf("prompt tokens differ: %d with caching, %d without", with.Prompt, without.Prompt)
	}
	ratio := cost(with) / cost(without)
	t.Logf("cost with caching $%.4f, without $%.4f: ratio %.3f (usage %+v)", cost(with), cost(without), ratio, with)
	if ratio > 0.35 {
		t.Errorf("cost ratio %.3f, goal <= 0.35", ratio)
	}
}

// BenchmarkPromptCaching reports the cost of the scripted 30-turn task with
// prompt caching as a fraction of its cost without (cost-ratio), billed as
// Anthropic bills: cache write 1.25x, read 0.1x of the input price.
func BenchmarkPromptCaching(b *testing.B) {
	var ratio float64
	for b.Loop() {
		ratio = cost(cachedTask(b, false)) / cost(cachedTask(b, true))
	}
	b.ReportMetric(ratio, "cost-ratio")
}

// benchSystem is a system prompt of the agent's size (about 2,500 tokens:
// instructions and a repo map).
var benchSystem = "You are a coding agent working in a Go repository. Use the tools to read files, run commands and edit code; answer when done.\n" +
	strings.Repeat("pkg/file.go: func Handle(ctx context.Context, req *Request) (*Response, error) // handles one request, validating its fields first\n", 80)

var benchTools = func() []llm.Tool {
	var tools []llm.Tool
	for _, name := range []string{"read_file", "write_file", "edit_file", "run", "grep", "list_dir"} {
		tools = append(tools, llm.Tool{
			Name:        name,
			Description: "The " + name + " tool. " + strings.Repeat("It works on the workspace and reports errors plainly. ", 6),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"workspace-relative path"},"text":{"type":"string"}},"required":["path"]}`),
		})
	}
	return tools
}()

// benchFile is a tool result of typical size (about 600 tokens).
func benchFile(turn int) string {
	return fmt.Sprintf("// file %02d\n", turn) + strings.Repeat(fmt.Sprintf("func f%02d(x int) int { return x*%d + 1 } // arithmetic helper\n", turn, turn), 40)
}
