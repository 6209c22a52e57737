// These tests check the test server against go-openai itself, the client
// that production uses; they live here because only the client (this package) imports
// go-openai.
package llmclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

func rawClient(s *llmtest.Server, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.URL
	return openai.NewClientWithConfig(cfg)
}

func rawRequest(msgs ...openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "test-model", Messages: msgs,
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}}
}

func rawUser(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s}
}

func rawAssistantCalls(ids ...string) openai.ChatCompletionMessage {
	m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, openai.ToolCall{
			ID: id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`},
		})
	}
	return m
}

func rawToolAnswer(id, content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: content}
}

func TestLLMTestServerRejectsOverHTTP(t *testing.T) {
	tests := []struct {
		name       string
		opts       []llmtest.Option
		key        string
		req        openai.ChatCompletionRequest
		wantStatus int
		wantMsg    string
		wantCode   any
	}{
		{name: "orphan tool message", key: "k", req: rawRequest(rawUser("hi"), rawToolAnswer("call_a", "A")),
			wantStatus: 400, wantMsg: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
		{name: "unanswered tool call", key: "k", req: rawRequest(rawUser("hi"), rawAssistantCalls("call_x")),
			wantStatus: 400, wantMsg: "The following tool_call_ids did not have response messages: call_x"},
		{name: "empty tool content dropped by omitempty", key: "k", req: rawRequest(rawUser("hi"), rawAssistantCalls("c"), rawToolAnswer("c", "")),
			wantStatus: 400, wantMsg: "Missing required parameter: 'messages[2].content'.", wantCode: "missing_required_parameter"},
		{name: "no bearer", key: "", req: rawRequest(rawUser("hi")), wantStatus: 401, wantMsg: "You didn't provide an API key"},
		{name: "wrong key", opts: []llmtest.Option{llmtest.WithKey("right")}, key: "wrong", req: rawRequest(rawUser("hi")),
			wantStatus: 401, wantMsg: "Incorrect API key provided.", wantCode: "invalid_api_key"},
		{name: "over the context window", opts: []llmtest.Option{llmtest.WithContextWindow(10)}, key: "k",
			req: rawRequest(rawUser(strings.Repeat("x", 100))), wantStatus: 400,
			wantMsg: "maximum context length is 10 tokens", wantCode: "context_length_exceeded"},
		{name: "no scripted reply", key: "k", req: rawRequest(rawUser("hi")), wantStatus: 500,
			wantMsg: "llmtest: no scripted reply for request 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t, tt.opts...)
			_, err := rawClient(s, tt.key).CreateChatCompletion(t.Context(), tt.req)
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error = %v (%T), want *openai.APIError", err, err)
			}
			if apiErr.HTTPStatusCode != tt.wantStatus || !strings.Contains(apiErr.Message, tt.wantMsg) {
				t.Fatalf("got HTTP %d %q, want HTTP %d containing %q", apiErr.HTTPStatusCode, apiErr.Message, tt.wantStatus, tt.wantMsg)
			}
			if tt.wantCode != nil && apiErr.Code != tt.wantCode {
				t.Errorf("code = %v, want %v", apiErr.Code, tt.wantCode)
			}
			if got := s.Rejections(); len(got) != 1 || !strings.Contains(got[0], tt.wantMsg) {
				t.Errorf("Rejections() = %q, want one naming %q", got, tt.wantMsg)
			}
		})
	}
}

func TestLLMTestServerStreamsToolCalls(t *testing.T) {
	for _, quirks := range []llmtest.Quirk{0, llmtest.QuirkRepeatName, llmtest.QuirkNoIndex} {
		t.Run(fmt.Sprintf("quirks=%d", quirks), func(t *testing.T) {
			s := llmtest.New(t, llmtest.WithChunkSize(3))
			reply := llmtest.Calls(llmtest.Call("read_file", map[string]string{"path": "main.go"}))
			reply.Content = "Reading it."
			reply.Quirks = quirks
			s.Enqueue(reply)
			req := rawRequest(rawUser("read main.go"))
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
			stream, err := rawClient(s, "k").CreateChatCompletionStream(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			var content, args, name, finish string
			var chunks int
			var usage *openai.Usage
			for {
				resp, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				chunks++
				if resp.Usage != nil {
					usage = resp.Usage
				}
				for _, c := range resp.Choices {
					content += c.Delta.Content
					for _, tc := range c.Delta.ToolCalls {
						if (tc.Index == nil) != (quirks&llmtest.QuirkNoIndex != 0) {
							t.Errorf("tool call delta index = %v with quirks %d", tc.Index, quirks)
						}
						if tc.Function.Name != "" && name != tc.Function.Name {
							name += tc.Function.Name
						}
						args += tc.Function.Arguments
					}
					if c.FinishReason != "" {
						finish = string(c.FinishReason)
					}
				}
			}
			if content != "Reading it." || name != "read_file" || args != `{"path":"main.go"}` || finish != "tool_calls" {
				t.Errorf("got content %q name %q args %q finish %q", content, name, args, finish)
			}
			if chunks < 8 {
				t.Errorf("%d chunks: chunk size 3 should split the answer finely", chunks)
			}
			if usage == nil || usage.PromptTokens == 0 || usage.CompletionTokens == 0 {
				t.Errorf("usage chunk = %+v, want chars/4 figures", usage)
			}
			if r := s.Rejections(); len(r) != 0 {
				t.Errorf("rejections: %q", r)
			}
		})
	}
}

func TestLLMTestServerJSONReplyAndScriptedError(t *testing.T) {
	s := llmtest.New(t, llmtest.WithKey("secret"))
	s.Enqueue(
		llmtest.Reply{Status: 429, RetryAfter: "7"},
		llmtest.Calls(llmtest.ToolCall{ID: "call_mine", Name: "read_file", Arguments: `{"path":"x"}`}),
	)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("got %d Retry-After %q, want 429 and 7", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	got, err := rawClient(s, "secret").CreateChatCompletion(t.Context(), rawRequest(rawUser("hi")))
	if err != nil {
		t.Fatal(err)
	}
	calls := got.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "call_mine" || got.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Errorf("got %+v", got.Choices[0])
	}
	if len(s.Requests()) != 2 || s.Pending() != 0 {
		t.Errorf("Requests() = %d, Pending() = %d; want 2 and 0", len(s.Requests()), s.Pending())
	}
}

func TestLLMTestServerHandleConcurrent(t *testing.T) {
	s := llmtest.New(t)
	s.Handle(func(req llmtest.Request) llmtest.Reply {
		return llmtest.Text("echo " + req.Messages[len(req.Messages)-1].Content)
	})
	c := rawClient(s, "k")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			msg := fmt.Sprintf("n%d", i)
			resp, err := c.CreateChatCompletion(t.Context(), rawRequest(rawUser(msg)))
			if err == nil && resp.Choices[0].Message.Content != "echo "+msg {
				err = fmt.Errorf("request %s answered %q", msg, resp.Choices[0].Message.Content)
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
}

func TestLLMTestServerListensOnEveryInterface(t *testing.T) {
	s := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"))
	if want := fmt.Sprintf("http://127.0.0.1:%d/v1", s.Port()); s.URL != want {
		t.Fatalf("URL = %q, want %q", s.URL, want)
	}
	s.Enqueue(llmtest.Text("ok"))
	if _, err := rawClient(s, "k").CreateChatCompletion(t.Context(), rawRequest(rawUser("hi"))); err != nil {
		t.Fatal(err)
	}
}

func TestLLMTestServerHangEndsWithTheClient(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := llmtest.New(t)
			s.Enqueue(llmtest.Reply{Hang: true})
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			var err error
			if stream {
				var st *openai.ChatCompletionStream
				st, err = rawClient(s, "k").CreateChatCompletionStream(ctx, rawRequest(rawUser("hi")))
				if err == nil {
					defer st.Close()
					_, err = st.Recv() // the role chunk arrives
					if err == nil {
						_, err = st.Recv()
					}
				}
			} else {
				_, err = rawClient(s, "k").CreateChatCompletion(ctx, rawRequest(rawUser("hi")))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want the client's deadline", err)
			}
		})
	}
}

func TestLLMTestServerCloseEndsHangingRequests(t *testing.T) {
	s := llmtest.NewServer()
	arrived := make(chan struct{})
	s.Handle(func(llmtest.Request) llmtest.Reply {
		close(arrived)
		return llmtest.Reply{Hang: true}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := rawClient(s, "k").CreateChatCompletion(t.Context(), rawRequest(rawUser("hi")))
		errc <- err
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the request never reached the server")
	}
	s.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a hanging request ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the hanging request running")
	}
}
