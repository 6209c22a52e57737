package llmclient_test

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// Each provider rule of the profiles against the strict server in that
// provider's mode: the right profile gets through two turns (a tool call,
// its result, a user message, the answer); the wrong one gets the
// provider's 400, so the rule is what makes the difference.
func TestProfilesAgainstProviderModes(t *testing.T) {
	tests := []struct {
		mode        llmtest.Mode
		right       string
		wrong       map[string]string
		quirks      llmtest.Quirk
		wantWrong   string
		streamCases []bool
	}{
		{mode: llmtest.ModeKimi, right: "moonshot", wrong: map[string]string{"profile": "default", "reasoning": "none"},
			wantWrong: "reasoning_content is missing"},
		{mode: llmtest.ModeDeepSeek, right: "deepseek", wrong: map[string]string{"profile": "deepseek", "reasoning": "none"},
			wantWrong: "Missing `reasoning_content` field"},
		{mode: llmtest.ModeGroq, right: "groq", wrong: map[string]string{"profile": "deepseek"},
			wantWrong: "property 'reasoning_content' is unsupported"},
		{mode: llmtest.ModeMistral, right: "mistral", wrong: map[string]string{"profile": "mistral", "tool_call_ids": "any"},
			quirks: llmtest.QuirkNoID, wantWrong: "with a length of 9"},
		{mode: llmtest.ModeMistral, right: "mistral", wrong: map[string]string{"profile": "mistral", "bridge_tool_user": "false"},
			wantWrong: "Unexpected role 'user' after role 'tool'"},
		{mode: llmtest.ModeGemini, right: "gemini", wrong: map[string]string{"profile": "default"},
			wantWrong: "is missing a `thought_signature`"},
		{mode: llmtest.ModeOpenRouter, right: "openrouter", wrong: map[string]string{"profile": "default", "reasoning": "none"},
			wantWrong: "reasoning_details must be passed back unchanged"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			name := string(tt.mode) + "/" + tt.right + "/" + tt.wantWrong
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Run("right profile", func(t *testing.T) {
					s, err := twoTurns(t, tt.mode, tt.quirks, map[string]string{"profile": tt.right}, stream)
					if err != nil {
						t.Fatalf("second turn: %v", err)
					}
					if r := s.Rejections(); len(r) != 0 {
						t.Fatalf("rejections: %q", r)
					}
				})
				t.Run("wrong profile", func(t *testing.T) {
					_, err := twoTurns(t, tt.mode, tt.quirks, tt.wrong, stream)
					if err == nil || !strings.Contains(err.Error(), tt.wantWrong) {
						t.Fatalf("second turn error = %v, want the provider's 400 %q", err, tt.wantWrong)
					}
				})
			})
		}
	}
}

func twoTurns(t *testing.T, mode llmtest.Mode, quirks llmtest.Quirk, compat map[string]string, stream bool) (*llmtest.Server, error) {
	t.Helper()
	s := llmtest.New(t, llmtest.WithMode(mode), llmtest.WithChunkSize(5))
	first := llmtest.Calls(llmtest.Call("read_file", map[string]string{"path": "a.go"}), llmtest.Call("read_file", map[string]string{"path": "b.go"}))
	first.Quirks = quirks
	s.Enqueue(first, llmtest.Text("done"))
	c := newClient(t, s, func(cfg *llmclient.Config) { cfg.Compat = compat; cfg.MaxRetries = 0 })
	tools := []llm.Tool{{Name: "read_file", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "You code."}, userMsg("read a.go and b.go")}
	resp, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: stream}, nil)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if len(resp.Message.ToolCalls) != 2 {
		t.Fatalf("first turn: %d tool calls, want 2", len(resp.Message.ToolCalls))
	}
	msgs = append(msgs, resp.Message)
	for _, tc := range resp.Message.ToolCalls {
		msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "package a"})
	}
	msgs = append(msgs, userMsg("now summarise"))
	_, err = c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: tools, Stream: stream}, nil)
	return s, err
}
