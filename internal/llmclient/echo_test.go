package llmclient_test

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestEchoToUnknownHost: a server the profile table does not know (the
// test server's 127.0.0.1 on a random port gets the default profile) that
// wants its reasoning back gets it, in the field it sent it: Kimi's
// reasoning_content, OpenRouter-style reasoning with signed
// reasoning_details. The default profile sent none before (issue 39 item
// 9), and these servers answered 400.
func TestEchoToUnknownHost(t *testing.T) {
	for _, tc := range []struct {
		mode  llmtest.Mode
		field string
	}{
		{llmtest.ModeKimi, "reasoning_content"},
		{llmtest.ModeDeepSeek, "reasoning_content"},
		{llmtest.ModeOpenRouter, "reasoning"},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(string(tc.mode)+map[bool]string{true: "/stream", false: ""}[stream], func(t *testing.T) {
				s, err := twoTurns(t, tc.mode, 0, nil, stream)
				if err != nil {
					t.Fatalf("second turn: %v", err)
				}
				noRejections(t, s)
				if p := newClient(t, s).Profile(); p.Name != "default" || p.Reasoning != llm.ReasoningEcho {
					t.Fatalf("profile %s (reasoning %s), want default with echo", p.Name, p.Reasoning)
				}
				req := s.Requests()[1]
				var echoed *string
				for _, m := range req.Messages {
					if m.Role == llm.RoleAssistant {
						echoed = m.ReasoningContent
						if tc.field == "reasoning" {
							echoed = m.Reasoning
						}
						if tc.field == "reasoning" && m.ReasoningContent != nil {
							t.Errorf("reasoning_content sent to a server that sent `reasoning`")
						}
					}
				}
				if echoed == nil || *echoed != "Let me think about which tool to call." {
					t.Errorf("%s sent back: %v, want the server's reasoning", tc.field, echoed)
				}
			})
		}
	}
}

// TestEchoRefusedOnceThenDropped: an unknown server that refuses reasoning
// sent back answers 400 once; the request goes again without it at once,
// and no later request of the client carries it.
func TestEchoRefusedOnceThenDropped(t *testing.T) {
	s := llmtest.New(t, llmtest.WithMode(llmtest.ModeNoReasoningBack))
	s.Enqueue(llmtest.Calls(llmtest.Call("read_file", map[string]string{"path": "a.go"})),
		llmtest.Calls(llmtest.Call("read_file", map[string]string{"path": "b.go"})), llmtest.Text("done"))
	c := newClient(t, s, func(cfg *llmclient.Config) { cfg.MaxRetries = 0 })
	rtools := []llm.Tool{{Name: "read_file", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	msgs := []llm.Message{userMsg("read a.go and b.go")}
	for turn := 1; turn <= 3; turn++ {
		resp, err := c.Chat(t.Context(), llm.Request{Messages: msgs, Tools: rtools, Stream: true}, nil)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		msgs = append(msgs, resp.Message)
		for _, tc := range resp.Message.ToolCalls {
			msgs = append(msgs, toolMsg(tc.ID, "package a"))
		}
	}
	reqs, rej := s.Requests(), s.Rejections()
	if len(reqs) != 4 || len(rej) != 1 || !strings.Contains(rej[0], "request 2: HTTP 400") || !strings.Contains(rej[0], "'reasoning_content' is unsupported") {
		t.Fatalf("%d requests, rejections %q; want 4 requests, the second refused for reasoning_content", len(reqs), rej)
	}
	for i, req := range reqs[2:] {
		for _, m := range req.Messages {
			if m.ReasoningContent != nil || m.Reasoning != nil || len(m.ReasoningDetails) > 0 {
				t.Errorf("request %d still sends reasoning back", i+3)
			}
		}
	}
}
