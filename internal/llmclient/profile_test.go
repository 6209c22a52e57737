package llmclient_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func TestCompatOverrides(t *testing.T) {
	p, fields, err := llm.ResolveProfile("https://api.deepseek.com", map[string]string{"reasoning": "none", "stream_options": "false"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Reasoning != llm.ReasoningNone || p.StreamOptions || !p.ReasoningOnToolCalls {
		t.Errorf("profile %+v: want reasoning none, no stream_options, the rest deepseek's", p)
	}
	src := map[string]string{}
	for _, f := range fields {
		src[f.Key] = f.Source
	}
	if src["reasoning"] != "compat" || src["stream_options"] != "compat" || src["token_field"] != "profile deepseek" {
		t.Errorf("sources %v", src)
	}
	for _, bad := range []map[string]string{
		{"profile": "nope"}, {"reasoning": "maybe"}, {"temperature": "yes please"}, {"tokenfield": "x"},
		{"profile": "openai", "reasoning_effort": "extreme"},
	} {
		if _, _, err := llm.ResolveProfile("https://api.openai.com/v1", bad, ""); err == nil {
			t.Errorf("compat %v accepted", bad)
		}
	}
	// A bad compat map fails the first call, naming the key, and sends nothing.
	s := llmtest.New(t)
	c := newClient(t, s, func(cfg *llmclient.Config) { cfg.Compat = map[string]string{"reasoning": "maybe"} })
	if _, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg("hi")}}, nil); err == nil || !strings.Contains(err.Error(), "compat key reasoning") {
		t.Fatalf("err = %v, want one naming compat key reasoning", err)
	}
	if len(s.Requests()) != 0 {
		t.Error("a request went out with a bad compat map")
	}
}

// Kimi refuses an assistant tool-call message without reasoning_content,
// even one with no thinking (an older session, a non-thinking turn):
// go-openai's omitempty would drop the empty field.
func TestEmptyReasoningOnToolCallsForKimi(t *testing.T) {
	history := []llm.Message{
		userMsg("read a.go"),
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "package a"},
	}
	for _, tt := range []struct {
		profile string
		ok      bool
	}{{"moonshot", true}, {"zai", false}} {
		t.Run(tt.profile, func(t *testing.T) {
			s := llmtest.New(t, llmtest.WithMode(llmtest.ModeKimi))
			s.Enqueue(llmtest.Text("done"))
			c := newClient(t, s, func(cfg *llmclient.Config) { cfg.Compat = map[string]string{"profile": tt.profile}; cfg.MaxRetries = 0 })
			_, err := c.Chat(t.Context(), llm.Request{Messages: history, Tools: tools}, nil)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if tt.ok {
				got := s.Requests()[0].Messages[1].ReasoningContent
				if got == nil || *got != "" {
					t.Errorf("reasoning_content = %v, want present and empty", got)
				}
			}
		})
	}
}

// Opaque reasoning state survives a session file; a file from before it
// existed reads as before (TestMessageJSONIsTheWireShape).
func TestReasoningStateInSessionJSON(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, ReasoningContent: "think",
		ReasoningDetails: json.RawMessage(`[{"type":"reasoning.text","text":"think","signature":"c2ln","index":0}]`),
		ToolCalls:        []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: "{}", ThoughtSignature: "sig=="}}}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"extra_content":{"google":{"thought_signature":"sig=="}}`) {
		t.Errorf("encoded %s: want the signature in the wire shape", raw)
	}
	var back llm.Message
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("round trip %+v, want %+v", back, m)
	}
}

// Mistral's ids: any id maps to nine alphanumerics, the same way in the
// assistant message and the tool message, and an id Mistral made passes.
func TestMistralToolCallIDs(t *testing.T) {
	s := llmtest.New(t, llmtest.WithMode(llmtest.ModeMistral))
	s.Enqueue(llmtest.Text("done"))
	c := newClient(t, s, func(cfg *llmclient.Config) { cfg.Compat = map[string]string{"profile": "mistral"} })
	history := []llm.Message{
		userMsg("go"),
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: "{}"}, {ID: "D681PevKs", Name: "read_file", Arguments: "{}"}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "a"},
		{Role: llm.RoleTool, ToolCallID: "D681PevKs", Content: "b"},
	}
	if _, err := c.Chat(t.Context(), llm.Request{Messages: history, Tools: tools}, nil); err != nil {
		t.Fatal(err)
	}
	sent := s.Requests()[0].Messages
	calls := sent[1].ToolCalls
	if calls[0].ID == "call_1" || calls[0].ID != sent[2].ToolCallID || calls[1].ID != "D681PevKs" || sent[3].ToolCallID != "D681PevKs" {
		t.Errorf("ids sent: calls %q %q, answers %q %q", calls[0].ID, calls[1].ID, sent[2].ToolCallID, sent[3].ToolCallID)
	}
}

func TestProfileTopLevelFields(t *testing.T) {
	temp := 0.2
	tests := []struct {
		name   string
		compat map[string]string
		effort string // the reasoning_effort setting
		check  func(t *testing.T, r llmtest.Request)
	}{
		{name: "default: system role, stream_options, temperature", check: func(t *testing.T, r llmtest.Request) {
			if r.Messages[0].Role != "system" || r.StreamOptions == nil || r.Temperature == nil || *r.Temperature != temp || r.ParallelToolCalls != nil {
				t.Errorf("sent %+v", r)
			}
		}},
		{name: "openai keeps developer", compat: map[string]string{"profile": "openai", "temperature": "false", "reasoning_effort": "low"}, check: func(t *testing.T, r llmtest.Request) {
			if r.Messages[0].Role != "developer" || r.Temperature != nil || r.ReasoningEffort != "low" {
				t.Errorf("sent role %s, temperature %v, effort %q", r.Messages[0].Role, r.Temperature, r.ReasoningEffort)
			}
		}},
		{name: "the effort setting", compat: map[string]string{"profile": "openai"}, effort: "high", check: func(t *testing.T, r llmtest.Request) {
			if r.ReasoningEffort != "high" {
				t.Errorf("effort %q, want the setting's high", r.ReasoningEffort)
			}
		}},
		{name: "compat strips the setting's effort where refused", compat: map[string]string{"reasoning_effort": ""}, effort: "high", check: func(t *testing.T, r llmtest.Request) {
			if r.ReasoningEffort != "" {
				t.Errorf("effort %q sent despite compat reasoning_effort: \"\"", r.ReasoningEffort)
			}
		}},
		{name: "mistral: no stream_options", compat: map[string]string{"profile": "mistral"}, check: func(t *testing.T, r llmtest.Request) {
			if r.StreamOptions != nil {
				t.Error("stream_options sent to mistral")
			}
		}},
		{name: "llama.cpp asks for parallel calls", compat: map[string]string{"profile": "llamacpp"}, check: func(t *testing.T, r llmtest.Request) {
			if r.ParallelToolCalls == nil || !*r.ParallelToolCalls {
				t.Error("parallel_tool_calls not sent to llama.cpp")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t)
			s.Enqueue(llmtest.Text("ok"))
			c := newClient(t, s, func(cfg *llmclient.Config) { cfg.Compat, cfg.ReasoningEffort = tt.compat, tt.effort })
			msgs := []llm.Message{{Role: llm.RoleDeveloper, Content: "be brief"}, userMsg("hi")}
			if _, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: true, Temperature: &temp}, nil); err != nil {
				t.Fatal(err)
			}
			tt.check(t, s.Requests()[0])
		})
	}
}

// A provider's 400 for a profile rule names the compat key that fixes it.
func TestProviderErrorNamesCompatKey(t *testing.T) {
	_, err := twoTurns(t, llmtest.ModeKimi, 0, map[string]string{"profile": "default", "reasoning": "none"}, true)
	if err == nil || !strings.Contains(err.Error(), "reasoning: reasoning_content") {
		t.Fatalf("err = %v, want the compat key that fixes it", err)
	}
	_, err = twoTurns(t, llmtest.ModeGroq, 0, map[string]string{"profile": "deepseek"}, true)
	if err == nil || !strings.Contains(err.Error(), "reasoning: none") {
		t.Fatalf("err = %v, want the compat key that fixes it", err)
	}
}

// The effort setting shows as the profile's reasoning_effort with its
// source, and is checked against the values the provider documents.
func TestProfileEffortSetting(t *testing.T) {
	p, fields, err := llm.ResolveProfile("https://api.openai.com/v1", nil, "low")
	if err != nil || p.ReasoningEffort != "low" {
		t.Fatalf("profile %+v, err %v", p, err)
	}
	for _, f := range fields {
		if f.Key == "reasoning_effort" && (f.Value != "low" || f.Source != "setting reasoning_effort") {
			t.Errorf("field %+v", f)
		}
	}
	if _, _, err := llm.ResolveProfile("https://api.openai.com/v1", nil, "extreme"); err == nil || !strings.Contains(err.Error(), "reasoning_effort") {
		t.Errorf("err = %v, want one naming reasoning_effort", err)
	}
}
