package llmclient_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// Replays of real provider traffic: charmbracelet/fantasy's recordings at
// commit caf105e7 (in the provider-traffic folder, fantasy-caf105e7/, with
// their licence and notice; llmtest.TrafficDir finds it), whose second requests
// replay the reasoning item with its encrypted content, as our client
// does (fantasy's later re-recordings drop it). The recorded answers are served in order to the real
// client, and the requests the client makes are compared with what the
// provider was sent and accepted (the second request of each recording got
// a 200).

// replay serves a cassette's responses in order and keeps the requests.
type replay struct {
	*httptest.Server
	c      llmtest.Cassette
	mu     sync.Mutex
	bodies [][]byte
	paths  []string
}

// newReplay serves the recording name (Test<Suite>/<model>/<case>.yaml)
// of fantasy-caf105e7/.
func newReplay(t *testing.T, name string) *replay {
	t.Helper()
	raw, err := os.ReadFile(llmtest.Recording(t, "fantasy-caf105e7/"+name))
	if err != nil {
		t.Fatal(err)
	}
	r := &replay{}
	if err := yaml.Unmarshal(raw, &r.c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.bodies)
		r.bodies = append(r.bodies, body)
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		if n >= len(r.c.Interactions) {
			http.Error(w, "the recording has no more interactions", http.StatusGone)
			return
		}
		it := r.c.Interactions[n].Response
		for _, ct := range it.Headers["Content-Type"] {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(it.Code)
		_, _ = io.WriteString(w, it.Body)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *replay) recorded(t *testing.T, i int) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.c.Interactions[i].Request.Body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (r *replay) sent(t *testing.T, i int) map[string]any { //nolint:unparam // i is the request index, as recorded(t, i)'s: the tests compare the second request (1) of the two-turn fixtures
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.bodies) {
		t.Fatalf("request %d was not sent", i)
	}
	var m map[string]any
	if err := json.Unmarshal(r.bodies[i], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var weatherTool = llm.Tool{Name: "weather", Description: "Get weather information for a location",
	Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"the city"}},"required":["location"]}`)}

// weatherLoop runs the recordings' conversation: ask, answer the call with
// "40 C", take the final answer.
func weatherLoop(t *testing.T, c *llmclient.Client, stream bool) (first, final *llm.Response) {
	t.Helper()
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a helpful assistant"},
		{Role: llm.RoleUser, Content: "What's the weather in Florence, Italy?"},
	}
	req := llm.Request{Messages: msgs, Tools: []llm.Tool{weatherTool}, Stream: stream}
	first, err := c.Chat(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if len(first.Message.ToolCalls) != 1 || first.Message.ToolCalls[0].Name != "weather" {
		t.Fatalf("first turn: %+v", first.Message)
	}
	// Through JSON, as a session file keeps it.
	raw, _ := json.Marshal(first.Message)
	var back llm.Message
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	req.Messages = append(msgs, back, llm.Message{Role: llm.RoleTool, ToolCallID: back.ToolCalls[0].ID, Content: "40 C"})
	final, err = c.Chat(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	return first, final
}

// anthropicBlocks is the part of a Messages request the provider checks
// for a tool turn: each message's blocks, without cache_control (ours adds
// breakpoints the recording did not have) and with tool results as text.
func anthropicBlocks(req map[string]any) []any {
	var out []any
	for _, m := range req["messages"].([]any) {
		msg := m.(map[string]any)
		content, ok := msg["content"].([]any)
		if !ok {
			content = []any{map[string]any{"type": "text", "text": msg["content"]}}
		}
		var blocks []any
		for _, b := range content {
			blk := map[string]any{}
			for k, v := range b.(map[string]any) {
				switch k {
				case "cache_control", "is_error", "caller":
				case "content":
					var text []string
					for _, c := range v.([]any) {
						text = append(text, c.(map[string]any)["text"].(string))
					}
					blk[k] = strings.Join(text, "")
				default:
					blk[k] = v
				}
			}
			blocks = append(blocks, blk)
		}
		out = append(out, map[string]any{"role": msg["role"], "content": blocks})
	}
	return out
}

func TestRecordedAnthropicThinkingToolTurn(t *testing.T) {
	for _, tc := range []struct {
		file   string
		stream bool
		final  string
		usage  llm.Usage
	}{
		{"TestAnthropicThinking/claude-sonnet-4/thinking.yaml", false, "", llm.Usage{}},
		{"TestAnthropicThinking/claude-sonnet-4/thinking-streaming.yaml", true,
			"The current weather in Florence, Italy is 40°C (104°F). That's quite hot! If you're planning to visit or are currently there, make sure to stay hydrated and seek shade or air conditioning when possible.",
			llm.Usage{Prompt: 558, Completion: 51}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := newReplay(t, tc.file)
			c := llmclient.New(llmclient.Config{API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: r.URL, APIKey: testKey,
				Model: "claude-sonnet-4-20250514", MaxTokens: 4096, ThinkingBudget: 4000,
				BackoffBase: time.Millisecond})
			first, final := weatherLoop(t, c, tc.stream)
			if first.Message.ReasoningContent == "" || len(first.Message.ProviderState) == 0 {
				t.Errorf("the thinking was not kept: %+v", first.Message)
			}
			if r.paths[0] != "/v1/messages" {
				t.Errorf("path %s", r.paths[0])
			}
			// The second request carries the thinking block (text and
			// signature) before the tool_use, and the tool_result after,
			// exactly as the recorded request Anthropic accepted.
			got, want := anthropicBlocks(r.sent(t, 1)), anthropicBlocks(r.recorded(t, 1))
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("second request's messages differ from the recorded ones:\n got %s\nwant %s", g, w)
			}
			sent := r.sent(t, 1)
			if sent["thinking"].(map[string]any)["budget_tokens"] != 4000.0 {
				t.Errorf("thinking = %v", sent["thinking"])
			}
			if tc.final != "" && (final.Message.Content != tc.final || final.Usage != tc.usage) {
				t.Errorf("final %q usage %+v", final.Message.Content, final.Usage)
			}
			if final.Message.Content == "" || final.FinishReason != "stop" {
				t.Errorf("final answer %q (%s)", final.Message.Content, final.FinishReason)
			}
		})
	}
}

// responsesItems is the part of a Responses request that carries the tool
// turn: reasoning items (id and encrypted content), calls and outputs.
func responsesItems(req map[string]any) []any {
	var out []any
	for _, it := range req["input"].([]any) {
		item := it.(map[string]any)
		switch item["type"] {
		case "reasoning":
			out = append(out, map[string]any{"type": "reasoning", "id": item["id"], "encrypted_content": item["encrypted_content"]})
		case "function_call":
			out = append(out, map[string]any{"type": "function_call", "call_id": item["call_id"], "name": item["name"]})
		case "function_call_output":
			out = append(out, map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": item["output"]})
		}
	}
	return out
}

func TestRecordedResponsesReasoningToolTurn(t *testing.T) {
	for _, tc := range []struct {
		file, model string
		stream      bool
		usage       llm.Usage
	}{
		{"TestOpenAIResponsesWithSummaryThinking/openai-o4-mini/thinking.yaml", "o4-mini", false, llm.Usage{Prompt: 191, Completion: 16}},
		{"TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/thinking-streaming.yaml", "gpt-5", true, llm.Usage{Prompt: 99, Completion: 16}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := newReplay(t, tc.file)
			c := llmclient.New(llmclient.Config{API: llm.APIResponses, BaseURL: r.URL + "/v1", APIKey: testKey, Model: tc.model,
				BackoffBase: time.Millisecond})
			first, final := weatherLoop(t, c, tc.stream)
			if r.paths[0] != "/v1/responses" {
				t.Errorf("path %s", r.paths[0])
			}
			if first.Message.ToolCalls[0].Arguments != `{"location":"Florence, Italy"}` {
				t.Errorf("arguments %q", first.Message.ToolCalls[0].Arguments)
			}
			sent := r.sent(t, 1)
			if sent["store"] != false || !reflect.DeepEqual(sent["include"], []any{"reasoning.encrypted_content"}) {
				t.Errorf("not stateless: store %v include %v", sent["store"], sent["include"])
			}
			// The calls and outputs are the recorded ones; the reasoning
			// item is the one the first answer finished with (in a stream,
			// response.output_item.done), id and encrypted content
			// verbatim. The recorded second request replayed the same rs_
			// id statelessly and was accepted.
			reasoning := firstReasoning(t, r.c.Interactions[0].Response.Body)
			recorded := responsesItems(r.recorded(t, 1))
			if rec := recorded[0].(map[string]any); rec["type"] != "reasoning" || rec["id"] != reasoning["id"] {
				t.Fatalf("the recording does not replay the reasoning item: %v", rec)
			}
			want := append([]any{reasoning}, recorded[1:]...)
			got := responsesItems(sent)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("second request's items differ:\n got %s\nwant %s", g, w)
			}
			if final.Message.Content == "" || final.FinishReason != "stop" || final.Usage != tc.usage {
				t.Errorf("final answer %q (%s), usage %+v, want %+v", final.Message.Content, final.FinishReason, final.Usage, tc.usage)
			}
		})
	}
}

// firstReasoning is the finished reasoning item of a recorded first answer
// (JSON, or the item of a stream's response.output_item.done).
func firstReasoning(t *testing.T, body string) map[string]any {
	t.Helper()
	var items []map[string]any
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		var resp struct {
			Output []map[string]any `json:"output"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		items = resp.Output
	} else {
		for _, line := range strings.Split(body, "\n") {
			var ev struct {
				Type string         `json:"type"`
				Item map[string]any `json:"item"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) == nil && ev.Type == "response.output_item.done" {
				items = append(items, ev.Item)
			}
		}
	}
	for _, it := range items {
		if it["type"] == "reasoning" {
			return map[string]any{"type": "reasoning", "id": it["id"], "encrypted_content": it["encrypted_content"]}
		}
	}
	t.Fatal("no reasoning item in the recorded answer")
	return nil
}

// TestRecordedAnthropicParallelCalls: two calls in one answer; both
// results go back in one user message, in order, as in the recorded
// request Anthropic accepted (which carried cache_control breakpoints too).
func TestRecordedAnthropicParallelCalls(t *testing.T) {
	r := newReplay(t, "TestAnthropicCommonWithCacheControl/claude-sonnet-4/multi_tool_streaming.yaml")
	c := llmclient.New(llmclient.Config{API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: r.URL, APIKey: testKey,
		Model: "claude-sonnet-4-20250514", MaxTokens: 4000, BackoffBase: time.Millisecond})
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer","description":"first number"},"b":{"type":"integer","description":"second number"}},"required":["a","b"]}`)
	tools := []llm.Tool{{Name: "add", Description: "Add two numbers", Parameters: schema}, {Name: "multiply", Description: "Multiply two numbers", Parameters: schema}}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a helpful assistant. Always use both add and multiply at the same time."},
		{Role: llm.RoleUser, Content: "Add and multiply the number 2 and 3"},
	}
	first, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Message.ToolCalls) != 2 || first.Usage != (llm.Usage{Prompt: 502, Completion: 137}) {
		t.Fatalf("first answer %+v usage %+v", first.Message, first.Usage)
	}
	msgs = append(msgs, first.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: first.Message.ToolCalls[0].ID, Content: "5"},
		llm.Message{Role: llm.RoleTool, ToolCallID: first.Message.ToolCalls[1].ID, Content: "6"})
	final, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, want := anthropicBlocks(r.sent(t, 1)), anthropicBlocks(r.recorded(t, 1))
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("second request's messages differ:\n got %s\nwant %s", g, w)
	}
	if final.Message.Content == "" || final.Usage.Prompt != 700 {
		t.Errorf("final %q usage %+v", final.Message.Content, final.Usage)
	}
}
