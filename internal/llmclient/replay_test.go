package llmclient_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// Replays of provider traffic, one directory per case under
// testdata/replays (its README.md says where each comes from):
//
//	fixture.json    base URL, expected usage per turn, tool call count,
//	                final text; "recording" names a go-vcr cassette in the
//	                provider-traffic folder (llmtest.TrafficDir) whose two
//	                interactions are the conversation
//
// and, for a case written here from the provider's documented wire format
// (no recording), the conversation's files beside it:
//
//	request1.json   the first request (its messages and tools start the conversation)
//	response1.sse   the provider's streamed answer to it: tool calls, reasoning
//	response2.sse   its answer to the second request: the final text
//	accepted.json   the second request the provider accepted
//
// The client answers the tool calls with the accepted request's tool
// results and must send a second request that carries every tool call and
// the reasoning as the accepted one does (the profile of the base URL
// decides how). Adding a provider: one profile entry in profile.go, one
// directory here named after the profile (another case of a profile:
// <profile>-<case>).
func TestReplayProviders(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "replays", "*", "fixture.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, fx := range dirs {
		dir := filepath.Dir(fx)
		t.Run(filepath.Base(dir), func(t *testing.T) { replayProvider(t, dir) })
	}
}

// conversation is a replay's two exchanges: the requests as sent and
// accepted, the answers as streamed.
type conversation struct {
	request1, accepted, response1, response2 []byte
}

// loadConversation reads the conversation of the case in dir: from the
// recording fx names, or from the files beside fixture.json.
func loadConversation(t *testing.T, dir string, fx fixture) conversation {
	t.Helper()
	if fx.Recording == "" {
		read := func(name string) []byte {
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		return conversation{read("request1.json"), read("accepted.json"), read("response1.sse"), read("response2.sse")}
	}
	p := llmtest.Recording(t, fx.Recording)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var c llmtest.Cassette
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if len(c.Interactions) != 2 {
		t.Fatalf("%s: %d interactions, want the two of a tool call and its answer", p, len(c.Interactions))
	}
	first, second := c.Interactions[0], c.Interactions[1]
	if second.Response.Code != http.StatusOK {
		t.Fatalf("%s: the second request was answered %d: not one the provider accepted", p, second.Response.Code)
	}
	return conversation{[]byte(first.Request.Body), []byte(second.Request.Body), []byte(first.Response.Body), []byte(second.Response.Body)}
}

type fixture struct {
	Recording string            `json:"recording"`
	URL       string            `json:"url"`
	Compat    map[string]string `json:"compat"`
	ToolCalls int               `json:"tool_calls"`
	Usage     []struct {
		Prompt     int `json:"prompt"`
		Completion int `json:"completion"`
		Cached     int `json:"cached"`
	} `json:"usage"`
	FinalText string `json:"final_text"`
}

// wireReq is a request body as the provider reads it.
type wireReq struct {
	Model         string           `json:"model"`
	StreamOptions *json.RawMessage `json:"stream_options"`
	Messages      []map[string]any `json:"messages"`
	Tools         []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func readJSON(t *testing.T, what string, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func replayProvider(t *testing.T, dir string) {
	var fx fixture
	var first, accepted wireReq
	raw, err := os.ReadFile(filepath.Join(dir, "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	readJSON(t, filepath.Join(dir, "fixture.json"), raw, &fx)
	conv := loadConversation(t, dir, fx)
	readJSON(t, dir+": the first request", conv.request1, &first)
	readJSON(t, dir+": the accepted request", conv.accepted, &accepted)

	// The profile comes from the recorded base URL (or the fixture's compat).
	profile, _, err := llm.ResolveProfile(fx.URL, fx.Compat, "")
	if err != nil {
		t.Fatal(err)
	}
	// A directory is named after its profile, with "-<case>" for a second one.
	wantProfile, _, _ := strings.Cut(filepath.Base(dir), "-")
	if profile.Name != wantProfile {
		t.Fatalf("base URL %s picks profile %q, want %q", fx.URL, profile.Name, wantProfile)
	}

	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		answers := [][]byte{conv.response1, conv.response2}
		if n > len(answers) {
			http.Error(w, "no recorded answer", http.StatusInternalServerError)
			return
		}
		answer := answers[n-1]
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)

	compat := map[string]string{"profile": profile.Name}
	for k, v := range fx.Compat {
		compat[k] = v
	}
	c := llmclient.New(llmclient.Config{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: first.Model, Compat: compat, MaxTokens: 4000})
	var tools []llm.Tool
	for _, tl := range first.Tools {
		tools = append(tools, llm.Tool{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
	}
	var msgs []llm.Message
	for _, m := range first.Messages {
		msgs = append(msgs, llm.Message{Role: m["role"].(string), Content: m["content"].(string)})
	}

	resp1, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: true}, nil)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if got := len(resp1.Message.ToolCalls); got != fx.ToolCalls {
		t.Fatalf("first turn: %d tool calls, want %d", got, fx.ToolCalls)
	}
	checkUsage(t, "first turn", resp1.Usage, fx, 0)

	// The rest of the conversation as accepted.json has it: tool results
	// in call order, user messages (not the bridges: the client adds them).
	msgs = append(msgs, resp1.Message)
	calls := 0
	for _, m := range accepted.Messages[len(first.Messages)+1:] {
		switch m["role"] {
		case "tool":
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: resp1.Message.ToolCalls[calls].ID, Content: m["content"].(string)})
			calls++
		case "user":
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: m["content"].(string)})
		}
	}
	resp2, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: true}, nil)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	if resp2.Message.Content != fx.FinalText {
		t.Errorf("final text %q, want %q", resp2.Message.Content, fx.FinalText)
	}
	checkUsage(t, "second turn", resp2.Usage, fx, 1)

	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	var second wireReq
	if err := json.Unmarshal(bodies[1], &second); err != nil {
		t.Fatal(err)
	}
	compareMessages(t, second.Messages, accepted.Messages)
	if (second.StreamOptions == nil) != (accepted.StreamOptions == nil) {
		t.Errorf("stream_options sent: %v, accepted has it: %v", second.StreamOptions != nil, accepted.StreamOptions != nil)
	}
}

func checkUsage(t *testing.T, turn string, got llm.Usage, fx fixture, i int) {
	t.Helper()
	want := fx.Usage[i]
	if got.Prompt != want.Prompt || got.Completion != want.Completion || got.Cached != want.Cached || got.Estimated {
		t.Errorf("%s usage %+v, want prompt %d completion %d cached %d as reported", turn, got, want.Prompt, want.Completion, want.Cached)
	}
}

// compareMessages checks the sent history against the accepted one: every
// message's role, contents, tool call ids, names, arguments, and the
// reasoning fields present (and absent) exactly as accepted.
func compareMessages(t *testing.T, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("second request has %d messages, want %d:\n got %s\nwant %s", len(got), len(want), js(got), js(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g["role"] != w["role"] {
			t.Errorf("message %d: role %v, want %v", i, g["role"], w["role"])
			continue
		}
		if w["role"] == "assistant" && w["tool_calls"] == nil {
			continue // a bridge: its text is the client's
		}
		if trimmed(g["content"]) != trimmed(w["content"]) {
			t.Errorf("message %d: content %q, want %q", i, g["content"], w["content"])
		}
		if g["tool_call_id"] != w["tool_call_id"] {
			t.Errorf("message %d: tool_call_id %v, want %v", i, g["tool_call_id"], w["tool_call_id"])
		}
		for _, key := range []string{"reasoning_content", "reasoning", "reasoning_details", "tool_calls"} {
			if key == "tool_calls" {
				compareCalls(t, i, g[key], w[key])
				continue
			}
			if js(g[key]) != js(w[key]) {
				t.Errorf("message %d: %s\n got %s\nwant %s", i, key, js(g[key]), js(w[key]))
			}
		}
	}
}

func compareCalls(t *testing.T, i int, got, want any) {
	t.Helper()
	g, _ := got.([]any)
	w, _ := want.([]any)
	if len(g) != len(w) {
		t.Errorf("message %d: %d tool calls, want %d", i, len(g), len(w))
		return
	}
	for j := range w {
		gc, wc := g[j].(map[string]any), w[j].(map[string]any)
		for _, key := range []string{"id", "function", "extra_content"} {
			if js(gc[key]) != js(wc[key]) {
				t.Errorf("message %d call %d: %s\n got %s\nwant %s", i, j, key, js(gc[key]), js(wc[key]))
			}
		}
	}
}

func trimmed(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// js is canonical JSON (sorted keys) for comparing decoded values.
func js(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}
