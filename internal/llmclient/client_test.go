package llmclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

const testKey = "sk-test-SECRET-0123456789"

func newClient(t *testing.T, s *llmtest.Server, edit ...func(*llmclient.Config)) *llmclient.Client {
	t.Helper()
	cfg := llmclient.Config{
		BaseURL: s.URL, APIKey: testKey, Model: "test-model",
		MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
	}
	for _, e := range edit {
		e(&cfg)
	}
	return llmclient.New(cfg)
}

var tools = []llm.Tool{
	{Name: "read_file", Description: "Read a file",
		Parameters: json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`)},
	{Name: "list_dir", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

func userMsg(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }

func toolMsg(id, content string) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: content}
}

func noRejections(t *testing.T, s *llmtest.Server) {
	t.Helper()
	if r := s.Rejections(); len(r) != 0 {
		t.Errorf("the server rejected requests: %q", r)
	}
}

// TestToolCallRoundTrip runs call → answer → final text, the loop the agent
// runs, streaming and not, with the server's quirks.
func TestToolCallRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		quirks llmtest.Quirk
	}{
		{name: "json", stream: false},
		{name: "stream", stream: true},
		{name: "stream without index", stream: true, quirks: llmtest.QuirkNoIndex},
		{name: "stream with name in every chunk", stream: true, quirks: llmtest.QuirkRepeatName},
		{name: "stream without index, name repeated, no ids", stream: true,
			quirks: llmtest.QuirkNoIndex | llmtest.QuirkRepeatName | llmtest.QuirkNoID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.WithKey(testKey), llmtest.WithChunkSize(3), llmtest.WithQuirks(tt.quirks))
			first := llmtest.Calls(
				llmtest.Call("read_file", map[string]string{"path": "main.go"}),
				llmtest.Call("read_file", map[string]string{"path": "go.mod"}),
				llmtest.Call("list_dir", ""),
			)
			first.Content = "Let me look."
			s.Enqueue(first, llmtest.Text("Both files are fine."))
			c := newClient(t, s)

			var streamed strings.Builder
			history := []llm.Message{userMsg("check main.go and go.mod")}
			resp, err := c.Chat(t.Context(), llm.Request{Messages: history, Tools: tools, Stream: tt.stream},
				func(s string) { streamed.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Message.ToolCalls
			if len(calls) != 3 || resp.FinishReason != "tool_calls" {
				t.Fatalf("got %d calls, finish %q: %+v", len(calls), resp.FinishReason, calls)
			}
			want := [][2]string{{"read_file", `{"path":"main.go"}`}, {"read_file", `{"path":"go.mod"}`}, {"list_dir", "{}"}}
			ids := map[string]bool{}
			for i, call := range calls {
				if call.Name != want[i][0] || call.Arguments != want[i][1] {
					t.Errorf("call %d = %s %s, want %s %s", i, call.Name, call.Arguments, want[i][0], want[i][1])
				}
				if call.ID == "" || ids[call.ID] {
					t.Errorf("call %d has id %q (seen: %v)", i, call.ID, ids[call.ID])
				}
				ids[call.ID] = true
			}
			if tt.quirks&llmtest.QuirkNoID != 0 && !strings.HasPrefix(calls[0].ID, "call_") {
				t.Errorf("synthesised id %q, want call_<n>", calls[0].ID)
			}
			if resp.Message.Content != "Let me look." {
				t.Errorf("content = %q", resp.Message.Content)
			}
			if tt.stream && streamed.String() != "Let me look." {
				t.Errorf("onToken saw %q", streamed.String())
			}

			history = append(history, resp.Message)
			for _, call := range calls {
				history = append(history, toolMsg(call.ID, "contents of "+call.Arguments))
			}
			resp, err = c.Chat(t.Context(), llm.Request{Messages: history, Tools: tools, Stream: tt.stream}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "Both files are fine." || resp.FinishReason != "stop" || len(resp.Message.ToolCalls) != 0 {
				t.Errorf("final answer = %+v, finish %q", resp.Message, resp.FinishReason)
			}
			noRejections(t, s)
			if got := s.Requests()[1].Messages; len(got) != 5 || got[2].ToolCallID != calls[0].ID {
				t.Errorf("second request sent %d messages: %+v", len(got), got)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		reply  llmtest.Reply
		check  func(t *testing.T, u llm.Usage, sent []llmtest.Message)
	}{
		{name: "reported with cached tokens", stream: true,
			reply: llmtest.Reply{Content: "hi", Usage: &llmtest.Usage{PromptTokens: 1000, CompletionTokens: 20,
				PromptTokensDetails: &llmtest.PromptTokensDetails{CachedTokens: 800}}},
			check: func(t *testing.T, u llm.Usage, _ []llmtest.Message) {
				if u != (llm.Usage{Prompt: 1000, Completion: 20, Cached: 800}) {
					t.Errorf("usage = %+v", u)
				}
			}},
		{name: "reported, not streaming", reply: llmtest.Reply{Content: "hi", Usage: &llmtest.Usage{PromptTokens: 7, CompletionTokens: 3}},
			check: func(t *testing.T, u llm.Usage, _ []llmtest.Message) {
				if u != (llm.Usage{Prompt: 7, Completion: 3}) {
					t.Errorf("usage = %+v", u)
				}
			}},
		{name: "none sent while streaming", stream: true, reply: llmtest.Reply{Content: strings.Repeat("a", 40), NoUsage: true},
			check: func(t *testing.T, u llm.Usage, sent []llmtest.Message) {
				if !u.Estimated || u.Completion != 10 || u.Prompt <= llm.EstimateTokens([]llm.Message{{Role: sent[0].Role, Content: sent[0].Content}}) {
					t.Errorf("usage = %+v, want an estimate of 10 completion tokens and the prompt plus its tools", u)
				}
			}},
		{name: "none sent, not streaming", reply: llmtest.Reply{Content: strings.Repeat("a", 40), NoUsage: true},
			check: func(t *testing.T, u llm.Usage, _ []llmtest.Message) {
				if !u.Estimated || u.Completion != 10 {
					t.Errorf("usage = %+v, want an estimate of 10 completion tokens", u)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t)
			s.Enqueue(tt.reply, tt.reply)
			c := newClient(t, s)
			var total llm.Usage
			for range 2 {
				resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg(strings.Repeat("q", 80))}, Tools: tools, Stream: tt.stream}, nil)
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, resp.Usage, s.Requests()[0].Messages)
				total.Add(resp.Usage)
			}
			if c.Usage() != total || total.Prompt == 0 {
				t.Errorf("Client.Usage() = %+v, want the sum of both responses %+v", c.Usage(), total)
			}
		})
	}
}

func TestConcurrentChatsShareOneClient(t *testing.T) {
	s := llmtest.New(t)
	s.Handle(func(req llmtest.Request) llmtest.Reply {
		r := llmtest.Text("re: " + req.Messages[0].Content)
		r.Usage = &llmtest.Usage{PromptTokens: 10, CompletionTokens: 1}
		return r
	})
	c := newClient(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Go(func() {
			q := fmt.Sprintf("q%d", i)
			resp, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg(q)}, Stream: i%2 == 0}, nil)
			if err == nil && resp.Message.Content != "re: "+q {
				err = fmt.Errorf("%s answered %q", q, resp.Message.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := c.Usage(); got != (llm.Usage{Prompt: 100, Completion: 10}) {
		t.Errorf("Usage() = %+v, want 100/10", got)
	}
}

func TestMissingAPIKey(t *testing.T) {
	s := llmtest.New(t)
	c := newClient(t, s, func(cfg *llmclient.Config) { cfg.APIKey = "" }) // construction must not fail
	_, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg("hi")}}, nil)
	if !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v, want ErrNoAPIKey naming OPENAI_API_KEY", err)
	}
	if len(s.Requests()) != 0 {
		t.Error("a request without a key was sent")
	}
}

func TestMaxTokensField(t *testing.T) {
	// The field follows the provider's profile, not the model's name.
	tests := []struct {
		name                  string
		compat                map[string]string
		wantMax, wantMaxCompl int
	}{
		{name: "unknown server", wantMax: 512},
		{name: "openai profile", compat: map[string]string{"profile": "openai"}, wantMaxCompl: 512},
		{name: "groq profile", compat: map[string]string{"profile": "groq"}, wantMaxCompl: 512},
		{name: "overridden", compat: map[string]string{"profile": "openai", "token_field": "max_tokens"}, wantMax: 512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t)
			s.Enqueue(llmtest.Text("ok"))
			c := newClient(t, s, func(cfg *llmclient.Config) { cfg.Model, cfg.MaxTokens, cfg.Compat = "o3-mini", 512, tt.compat })
			if _, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg("hi")}}, nil); err != nil {
				t.Fatal(err)
			}
			got := s.Requests()[0]
			if got.MaxTokens != tt.wantMax || got.MaxCompletionTokens != tt.wantMaxCompl {
				t.Errorf("sent max_tokens %d, max_completion_tokens %d", got.MaxTokens, got.MaxCompletionTokens)
			}
		})
	}
}
