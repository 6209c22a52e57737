package llmclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
)

func newAnthropicClient(t *testing.T, s *anthropictest.Server, edit ...func(*llmclient.Config)) *llmclient.Client {
	t.Helper()
	cfg := llmclient.Config{
		API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: s.URL + "/v1", APIKey: testKey, Model: "claude-test",
		MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
	}
	for _, e := range edit {
		e(&cfg)
	}
	return llmclient.New(cfg)
}

var anthropicTools = []llm.Tool{
	{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
	{Name: "run", Description: "Run a command", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}}}`)},
}

// loop runs a tool loop the way the agent does: each call answered with a
// tool message, until the model answers without calls.
func loop(t *testing.T, c *llmclient.Client, stream bool, turns int) (*llm.Response, []llm.Message) {
	t.Helper()
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a coding agent."},
		{Role: llm.RoleUser, Content: "Fix the bug."},
	}
	for range turns {
		resp, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: anthropicTools, Stream: stream}, nil)
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			return resp, msgs
		}
		for _, tc := range resp.Message.ToolCalls {
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "result of " + tc.Name + " " + tc.Arguments})
		}
	}
	t.Fatalf("no final answer in %d turns", turns)
	return nil, nil
}

func TestAnthropicToolLoopWithThinking(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			s := anthropictest.New(t,
				anthropictest.Reply{Thinking: "I should read main.go and run the tests.", Text: "Looking.", Calls: []anthropictest.Call{
					{Name: "read_file", Input: `{"path":"main.go"}`},
					{Name: "run", Input: `{"cmd":"go test ./..."}`},
				}},
				anthropictest.Reply{Thinking: "Tests pass now.", Text: "Fixed the off-by-one."},
			)
			c := newAnthropicClient(t, s, func(c *llmclient.Config) { c.ThinkingBudget = 2048 })
			resp, msgs := loop(t, c, stream, 4)
			if rej := s.Rejections(); len(rej) > 0 {
				t.Fatalf("the fake refused: %q", rej)
			}
			if resp.Message.Content != "Fixed the off-by-one." || resp.FinishReason != "stop" {
				t.Errorf("final = %q (%s)", resp.Message.Content, resp.FinishReason)
			}
			first := msgs[2]
			if first.ReasoningContent != "I should read main.go and run the tests." || len(first.ToolCalls) != 2 {
				t.Fatalf("first answer = %+v", first)
			}
			if first.ToolCalls[0].Arguments != `{"path":"main.go"}` {
				t.Errorf("arguments = %q", first.ToolCalls[0].Arguments)
			}
			// The second request carries the thinking block with its
			// signature before the tool_use blocks, and both results in one
			// user message right after.
			bodies := s.Bodies()
			if len(bodies) != 2 {
				t.Fatalf("%d requests, want 2", len(bodies))
			}
			var second struct {
				System   []map[string]any `json:"system"`
				Thinking map[string]any   `json:"thinking"`
				Messages []struct {
					Role    string           `json:"role"`
					Content []map[string]any `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(bodies[1], &second); err != nil {
				t.Fatal(err)
			}
			if len(second.System) != 1 || second.System[0]["text"] != "You are a coding agent." {
				t.Errorf("system = %v", second.System)
			}
			if len(second.Messages) != 3 {
				t.Fatalf("messages = %d, want user, assistant, user", len(second.Messages))
			}
			asst := second.Messages[1].Content
			types := []string{}
			for _, b := range asst {
				types = append(types, b["type"].(string))
			}
			if strings.Join(types, ",") != "thinking,text,tool_use,tool_use" {
				t.Errorf("assistant blocks = %v", types)
			}
			if asst[0]["signature"] == "" || asst[0]["thinking"] != "I should read main.go and run the tests." {
				t.Errorf("thinking block = %v", asst[0])
			}
			results := second.Messages[2].Content
			if len(results) != 2 || results[0]["tool_use_id"] != asst[2]["id"] || results[1]["tool_use_id"] != asst[3]["id"] {
				t.Errorf("tool results = %v for calls %v, %v", results, asst[2]["id"], asst[3]["id"])
			}
			if msgs[2].ToolCalls[0].ID != asst[2]["id"] {
				t.Errorf("call id changed: %s vs %v", msgs[2].ToolCalls[0].ID, asst[2]["id"])
			}
		})
	}
}

// TestAnthropicHistorySurvivesJSON: a session file written and read back
// keeps the thinking state, so a resumed task replays it.
func TestAnthropicHistorySurvivesJSON(t *testing.T) {
	s := anthropictest.New(t,
		anthropictest.Reply{Thinking: "plan", Calls: []anthropictest.Call{{Name: "run", Input: `{"cmd":"ls"}`}}},
		anthropictest.Reply{Text: "ok"},
	)
	c := newAnthropicClient(t, s, func(c *llmclient.Config) { c.ThinkingBudget = 1024; c.MaxTokens = 4096 })
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "go"}}
	resp, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: anthropicTools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: resp.Message.ToolCalls[0].ID, Content: "a b"})
	raw, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"provider_state":{"anthropic":{"thinking":[{"type":"thinking"`) {
		t.Errorf("session JSON lacks the thinking state: %s", raw)
	}
	var back []llm.Message
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(t.Context(), llm.Request{Messages: back, Tools: anthropicTools}, nil); err != nil {
		t.Fatalf("resumed history refused: %v", err)
	}
}

// TestAnthropicThinkingWithoutState: a history from another dialect has no
// thinking block for its last tool turn; the request goes without thinking
// rather than being refused.
func TestAnthropicThinkingWithoutState(t *testing.T) {
	s := anthropictest.New(t, anthropictest.Reply{Text: "done"})
	c := newAnthropicClient(t, s, func(c *llmclient.Config) { c.ThinkingBudget = 1024 })
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "run", Arguments: `{"cmd":"ls"}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "a b"},
	}
	if _, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: anthropicTools}, nil); err != nil {
		t.Fatalf("chat: %v (fake: %q)", err, s.Rejections())
	}
	if strings.Contains(string(s.Bodies()[0]), `"thinking"`) {
		t.Errorf("thinking was on without a block to replay: %s", s.Bodies()[0])
	}
}

// The fake is as strict as the API: each of these histories is refused
// when sent as is, which the client's conversion prevents.
func TestAnthropicFakeIsStrict(t *testing.T) {
	s := anthropictest.New(t, anthropictest.Reply{Text: "x"})
	post := func(body string) string {
		t.Helper()
		c := newRaw(t, s.URL)
		return c(body)
	}
	for name, body := range map[string]string{
		"tool_result without tool_use": `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}]}`,
		"tool_use unanswered":          `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"run","input":{}}]},{"role":"user","content":"b"}]}`,
		"thinking missing":             `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"run","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}]}`,
		"forged signature":             `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"made-up"},{"type":"tool_use","id":"toolu_1","name":"run","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}]}`,
		"five breakpoints":             `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}},{"type":"text","text":"c","cache_control":{"type":"ephemeral"}},{"type":"text","text":"d","cache_control":{"type":"ephemeral"}}]}]}`,
		"empty text":                   `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`,
		"system role in messages":      `{"model":"m","max_tokens":10,"messages":[{"role":"system","content":"a"}]}`,
	} {
		if got := post(body); !strings.Contains(got, "400") {
			t.Errorf("%s: got %s, want 400", name, got)
		}
	}
}

// TestAnthropicCacheBreakpoints: tools, system and the conversation's end
// are marked, never more than four, and a later turn reads its prefix from
// the cache.
func TestAnthropicCacheBreakpoints(t *testing.T) {
	replies := []anthropictest.Reply{}
	for i := range 4 {
		replies = append(replies, anthropictest.Reply{Calls: []anthropictest.Call{{Name: "run", Input: `{"cmd":"step ` + string(rune('a'+i)) + `"}`}}})
	}
	replies = append(replies, anthropictest.Reply{Text: "done"})
	s := anthropictest.New(t, replies...)
	s.MinCacheTokens = 0
	c := newAnthropicClient(t, s)
	loop(t, c, true, 6)
	for i, b := range s.Bodies() {
		if n := strings.Count(string(b), `"cache_control"`); n > 4 || n < 3 {
			t.Errorf("request %d has %d cache_control blocks", i, n)
		}
	}
	us := s.Usages()
	last := us[len(us)-1]
	if last.CacheRead == 0 || last.CacheRead < 4*last.CacheWrite {
		t.Errorf("last turn usage %+v: want most of the prompt read from the cache", last)
	}
	total := c.Usage()
	if total.Cached == 0 || total.CacheWrite == 0 {
		t.Errorf("client usage %+v lacks cache counts", total)
	}
	var sum int
	for _, u := range us {
		sum += u.Input + u.CacheRead + u.CacheWrite
	}
	if total.Prompt != sum {
		t.Errorf("prompt tokens %d, want input+read+write %d", total.Prompt, sum)
	}
}

func TestAnthropicErrorsRetry(t *testing.T) {
	s := anthropictest.New(t,
		anthropictest.Reply{Status: 529, ErrType: "overloaded_error"},
		anthropictest.Reply{Status: 429, ErrType: "rate_limit_error", RetryAfter: "0"},
		anthropictest.Reply{Text: "partial", StreamError: "overloaded_error"},
		anthropictest.Reply{Text: "fine"},
	)
	var retries []error
	c := newAnthropicClient(t, s, func(c *llmclient.Config) {
		c.MaxRetries = 3
		c.OnRetry = func(_ int, _ time.Duration, err error) { retries = append(retries, err) }
	})
	resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Stream: true}, nil)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Message.Content != "fine" || len(retries) != 3 {
		t.Fatalf("content %q after %d retries (%v)", resp.Message.Content, len(retries), retries)
	}
	var e *llm.Error
	if !errors.As(retries[0], &e) || e.Status != 529 || e.Code != "overloaded_error" || !e.Retriable {
		t.Errorf("first failure = %#v", retries[0])
	}
	if strings.Contains(retries[0].Error(), testKey) {
		t.Error("the key leaked into an error")
	}
}

func TestAnthropicBadRequestIsFinal(t *testing.T) {
	s := anthropictest.New(t, anthropictest.Reply{Status: 401, ErrType: "authentication_error"})
	c := newAnthropicClient(t, s)
	_, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Status != 401 || e.Retriable || !llm.IsSetup(err) {
		t.Fatalf("err = %v", err)
	}
	if n := len(s.Bodies()); n != 1 {
		t.Errorf("%d requests, want 1 (no retry of a 401, also not by the SDK)", n)
	}
}

func TestAnthropicStreamTokens(t *testing.T) {
	s := anthropictest.New(t, anthropictest.Reply{Text: "hello world"})
	c := newAnthropicClient(t, s)
	var got strings.Builder
	resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Stream: true},
		func(d string) { got.WriteString(d) })
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "hello world" || resp.Message.Content != "hello world" || resp.Usage.Estimated {
		t.Errorf("tokens %q, content %q, usage %+v", got.String(), resp.Message.Content, resp.Usage)
	}
}

// newRaw posts bodies to a fake as the SDK would, returning status and body.
func newRaw(t *testing.T, base string) func(string) string {
	return func(body string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", "k")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, raw)
	}
}

func TestAnthropicSetupMessages(t *testing.T) {
	s := anthropictest.New(t, anthropictest.Reply{Status: 401, ErrType: "authentication_error"})
	_, err := newAnthropicClient(t, s).Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("401: %v", err)
	}
	_, err = newAnthropicClient(t, s, func(c *llmclient.Config) { c.APIKey = "" }).Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("no key: %v", err)
	}
}

func TestAnthropicIdleStreamRetried(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	s := anthropictest.New(t, anthropictest.Reply{Text: "partial", Stall: true}, anthropictest.Reply{Text: "whole"})
	var retries []error
	c := newAnthropicClient(t, s, func(c *llmclient.Config) {
		c.IdleTimeout = time.Second // generous: a loaded machine must not stall a healthy stream this long
		c.OnRetry = func(_ int, _ time.Duration, err error) { retries = append(retries, err) }
	})
	resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Stream: true}, nil)
	if err != nil || resp.Message.Content != "whole" {
		t.Fatalf("%v %+v", err, resp)
	}
	if len(retries) == 0 || !strings.Contains(retries[0].Error(), "no data from the server") {
		t.Errorf("retries %v", retries)
	}
}

// A history written against another server keeps its tool call ids; those
// the Messages API would refuse are rewritten in both halves of the pair.
func TestAnthropicForeignCallIDs(t *testing.T) {
	s := anthropictest.New(t, anthropictest.Reply{Text: "ok"})
	c := newAnthropicClient(t, s)
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "functions.run:0", Name: "run", Arguments: `{"cmd":"ls"}`}}},
		{Role: llm.RoleTool, ToolCallID: "functions.run:0", Content: "a b"},
	}
	if _, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: anthropicTools}, nil); err != nil {
		t.Fatalf("%v (fake: %q)", err, s.Rejections())
	}
	if !strings.Contains(string(s.Bodies()[0]), `"functions_run_0"`) {
		t.Errorf("ids not rewritten: %s", s.Bodies()[0])
	}
}

// TestAnthropicEffortTurnsOnThinking: the reasoning_effort setting alone
// turns extended thinking on, with its budget capped below max_tokens, and
// the thinking block (with its signature) goes back on the turn after the
// tool call: the strict fake answers 400 without it.
func TestAnthropicEffortTurnsOnThinking(t *testing.T) {
	s := anthropictest.New(t,
		anthropictest.Reply{Thinking: "Read it first.", Calls: []anthropictest.Call{{Name: "read_file", Input: `{"path":"main.go"}`}}},
		anthropictest.Reply{Thinking: "Done.", Text: "It is fine."},
	)
	c := newAnthropicClient(t, s, func(c *llmclient.Config) { c.ReasoningEffort = "high"; c.MaxTokens = 8192 })
	resp, _ := loop(t, c, false, 3)
	if rej := s.Rejections(); len(rej) > 0 {
		t.Fatalf("the fake refused: %q", rej)
	}
	if resp.Message.Content != "It is fine." {
		t.Errorf("final = %q", resp.Message.Content)
	}
	for i, body := range s.Bodies() {
		var req struct {
			Thinking struct {
				Type   string `json:"type"`
				Budget int    `json:"budget_tokens"`
			} `json:"thinking"`
			Messages []struct {
				Role    string           `json:"role"`
				Content []map[string]any `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if req.Thinking.Type != "enabled" || req.Thinking.Budget != 8192-1024 {
			t.Errorf("request %d: thinking %+v, want enabled with 7168 (high's 16384 capped below max_tokens 8192)", i, req.Thinking)
		}
		if i == 1 {
			asst := req.Messages[1]
			if asst.Role != "assistant" || len(asst.Content) == 0 || asst.Content[0]["type"] != "thinking" || asst.Content[0]["signature"] == "" {
				t.Errorf("second request's assistant message does not start with the signed thinking block: %+v", asst)
			}
		}
	}
}

// TestThinkingBudget: the budget_tokens each setting sends. A budget set by
// hand is sent as set; otherwise reasoning_effort picks one, capped below
// max_tokens with room for the answer, and off when no room is left for
// the API's minimum.
func TestThinkingBudget(t *testing.T) {
	for _, tt := range []struct {
		budget    int
		effort    string
		maxTokens int
		want      int
	}{
		{0, "", 8192, 0},
		{0, "none", 8192, 0},
		{0, "low", 8192, 4096},
		{0, "medium", 32000, 8192},
		{0, "high", 8192, 7168}, // capped: max_tokens must exceed it, with room for the answer
		{2048, "high", 8192, 2048},
		{4000, "", 4096, 4000},  // a budget set by hand is sent as set (Anthropic took this one); the setting wins over the effort
		{0, "minimal", 1500, 0}, // no room for the API's minimum: off
		{0, "xhigh", 0, 32768},  // max_tokens unknown: not capped
	} {
		t.Run(fmt.Sprintf("%d/%s/%d", tt.budget, tt.effort, tt.maxTokens), func(t *testing.T) {
			s := anthropictest.New(t, anthropictest.Reply{Text: "ok"})
			c := newAnthropicClient(t, s, func(c *llmclient.Config) {
				c.ThinkingBudget, c.ReasoningEffort, c.MaxTokens = tt.budget, tt.effort, tt.maxTokens
			})
			// Streamed: the SDK sends large max_tokens only so.
			if _, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Stream: true}, nil); err != nil {
				t.Fatal(err)
			}
			var req struct {
				Thinking struct {
					Budget int `json:"budget_tokens"`
				} `json:"thinking"`
			}
			if err := json.Unmarshal(s.Bodies()[0], &req); err != nil {
				t.Fatal(err)
			}
			if req.Thinking.Budget != tt.want {
				t.Errorf("budget_tokens %d, want %d", req.Thinking.Budget, tt.want)
			}
		})
	}
}
