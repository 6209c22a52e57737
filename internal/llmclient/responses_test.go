package llmclient_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest/responsestest"
)

func newResponsesClient(t *testing.T, s *responsestest.Server) *llmclient.Client {
	t.Helper()
	return llmclient.New(llmclient.Config{API: llm.APIResponses, BaseURL: s.URL + "/v1", APIKey: testKey, Model: "gpt-5.1-codex",
		MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
}

func TestResponsesToolLoopReplaysReasoning(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			s := responsestest.New(t,
				responsestest.Reply{Reasoning: "Read both files first.", Calls: []responsestest.Call{
					{Name: "read_file", Arguments: `{"path":"a.go"}`}, {Name: "read_file", Arguments: `{"path":"b.go"}`}}},
				responsestest.Reply{Reasoning: "Now run the tests.", Text: "Running.", Calls: []responsestest.Call{{Name: "run", Arguments: `{"cmd":"go test"}`}}},
				responsestest.Reply{Text: "All green."},
			)
			c := newResponsesClient(t, s)
			resp, msgs := loop(t, c, stream, 5)
			if rej := s.Rejections(); len(rej) > 0 {
				t.Fatalf("the fake refused: %q", rej)
			}
			if resp.Message.Content != "All green." || resp.FinishReason != "stop" {
				t.Errorf("final %q (%s)", resp.Message.Content, resp.FinishReason)
			}
			if msgs[2].ReasoningContent != "Read both files first." || len(msgs[2].ToolCalls) != 2 {
				t.Errorf("first answer %+v", msgs[2])
			}
			// The third request: instructions on top; each turn's
			// reasoning item (encrypted content included) before its
			// calls; outputs after them.
			var third struct {
				Instructions string            `json:"instructions"`
				Input        []json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(s.Bodies()[2], &third); err != nil {
				t.Fatal(err)
			}
			if third.Instructions != "You are a coding agent." {
				t.Errorf("instructions %q", third.Instructions)
			}
			var kinds []string
			for _, raw := range third.Input {
				var it struct{ Type, Role, EncryptedContent string }
				_ = json.Unmarshal(raw, &it)
				k := it.Type
				if k == "message" {
					k += ":" + it.Role
				}
				kinds = append(kinds, k)
			}
			want := "message:user,reasoning,function_call,function_call,function_call_output,function_call_output,reasoning,message:assistant,function_call,function_call_output"
			if strings.Join(kinds, ",") != want {
				t.Errorf("input items\n got %s\nwant %s", strings.Join(kinds, ","), want)
			}
			if u := c.Usage(); u.Cached == 0 || u.Cached >= u.Prompt {
				t.Errorf("usage %+v: want cached tokens counted inside prompt", u)
			}
		})
	}
}

// The fake is as strict as the API on stateless replays.
func TestResponsesFakeIsStrict(t *testing.T) {
	s := responsestest.New(t, responsestest.Reply{Reasoning: "r", Calls: []responsestest.Call{{Name: "run"}}}, responsestest.Reply{Text: "ok"})
	c := newResponsesClient(t, s)
	first, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}}, Tools: anthropicTools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := first.Message.ToolCalls[0]
	stripped := first.Message
	stripped.ProviderState = nil // a history that lost its reasoning items
	_, err = c.Chat(t.Context(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "go"}, stripped, {Role: llm.RoleTool, ToolCallID: call.ID, Content: "x"},
	}, Tools: anthropicTools}, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "required 'reasoning' item") || e.Retriable {
		t.Fatalf("a call without its reasoning item: %v", err)
	}
}

func TestResponsesErrors(t *testing.T) {
	s := responsestest.New(t, responsestest.Reply{Status: 500, ErrCode: "server_error"}, responsestest.Reply{Text: "ok"})
	c := newResponsesClient(t, s)
	resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Stream: true}, nil)
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("after a 500: %v %+v", err, resp)
	}
	s2 := responsestest.New(t, responsestest.Reply{Status: 401, ErrCode: "invalid_api_key"})
	_, err = newResponsesClient(t, s2).Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if !llm.IsSetup(err) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("401: %v", err)
	}
}

// TestResponsesReasoningEffort: the reasoning_effort setting goes out as
// reasoning.effort, which the fake checks against OpenAI's values; without
// the setting no reasoning object is sent.
func TestResponsesReasoningEffort(t *testing.T) {
	for _, effort := range []string{"high", ""} {
		s := responsestest.New(t, responsestest.Reply{Text: "ok"})
		c := llmclient.New(llmclient.Config{API: llm.APIResponses, BaseURL: s.URL + "/v1", APIKey: testKey, Model: "gpt-5.1-codex",
			ReasoningEffort: effort, BackoffBase: time.Millisecond})
		if _, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil); err != nil {
			t.Fatalf("effort %q: %v (fake: %q)", effort, err, s.Rejections())
		}
		var body struct {
			Reasoning *struct{ Effort string } `json:"reasoning"`
		}
		if err := json.Unmarshal(s.Bodies()[0], &body); err != nil {
			t.Fatal(err)
		}
		switch {
		case effort == "" && body.Reasoning != nil:
			t.Errorf("no effort set, but sent reasoning %+v", body.Reasoning)
		case effort != "" && (body.Reasoning == nil || body.Reasoning.Effort != effort):
			t.Errorf("effort %q sent as %+v", effort, body.Reasoning)
		}
	}
}
