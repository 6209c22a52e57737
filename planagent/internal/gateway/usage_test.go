package gateway_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
	"github.com/codeagent/codeagent/internal/llmtest/responsestest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
)

// clientTokens is the real client's own reading of a response's usage, in
// the report's terms: what the gateway must have counted for it.
func clientTokens(u llm.Usage) protocol.Tokens {
	return protocol.Tokens{Prompt: u.Prompt, Completion: u.Completion, Cached: u.Cached, CacheWrite: u.CacheWrite, CostUSD: u.CostUSD}
}

// counted is what g counted for attempt t1.1, the one each test issues.
func counted(t *testing.T, g *gateway.Gateway) protocol.Tokens {
	t.Helper()
	u, ok := g.Usage("t1.1")
	if !ok {
		t.Fatal("no usage for t1.1")
	}
	return u
}

// Each dialect, plain and streamed: the gateway's count is the provider's
// usage, the same figures the real client reads from the same responses
// (and, where the fake says what it billed, those).
func TestGatewayCountsUsage(t *testing.T) {
	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "plain", true: "stream"}[stream]
		t.Run("chat/"+mode, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.WithKey(realKey), llmtest.WithChunkSize(4))
			bills := []llmtest.Usage{
				{PromptTokens: 1200, CompletionTokens: 31, TotalTokens: 1231, PromptTokensDetails: &llmtest.PromptTokensDetails{CachedTokens: 1024}},
				{PromptTokens: 1300, CompletionTokens: 17, TotalTokens: 1317},
			}
			for _, b := range bills {
				srv.Enqueue(llmtest.Reply{Content: "hello", Usage: &b})
			}
			g, base, token, _ := start(t, srv.URL)
			c := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: token, Model: "test-model"})
			var want protocol.Tokens
			for range bills {
				resp, _, err := chat(t, c, stream)
				if err != nil {
					t.Fatalf("chat: %v (%q)", err, srv.Rejections())
				}
				want.Add(clientTokens(resp.Usage))
			}
			if wantBill := (protocol.Tokens{Prompt: 2500, Completion: 48, Cached: 1024}); want != wantBill {
				t.Fatalf("the client read %+v, the server billed %+v", want, wantBill)
			}
			if got := counted(t, g); got != want {
				t.Errorf("counted %+v, want %+v", got, want)
			}
		})
		t.Run("responses/"+mode, func(t *testing.T) {
			srv := responsestest.New(t, responsestest.Reply{Text: "one"}, responsestest.Reply{Text: "two"})
			g, base, token, _ := start(t, srv.URL+"/v1")
			c := llmclient.New(llmclient.Config{API: llm.APIResponses, BaseURL: base, APIKey: token, Model: "gpt-5-codex"})
			var want protocol.Tokens
			for range 2 {
				resp, _, err := chat(t, c, stream)
				if err != nil {
					t.Fatalf("responses: %v (%q)", err, srv.Rejections())
				}
				want.Add(clientTokens(resp.Usage))
			}
			if want.Prompt == 0 || want.Completion == 0 {
				t.Fatalf("the fake billed nothing: %+v", want)
			}
			if got := counted(t, g); got != want {
				t.Errorf("counted %+v, want %+v", got, want)
			}
		})
		t.Run("anthropic/"+mode, func(t *testing.T) {
			srv := anthropictest.New(t, anthropictest.Reply{Text: "one"}, anthropictest.Reply{Text: "two"})
			srv.MinCacheTokens = 16 // so the second request reads what the first wrote
			g, base, token, _ := start(t, srv.URL+"/v1")
			c := llmclient.New(llmclient.Config{API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: base, APIKey: token, Model: "claude-test"})
			var want protocol.Tokens
			msgs := []llm.Message{
				{Role: llm.RoleSystem, Content: strings.Repeat("You are a careful coding agent. ", 40)},
				{Role: llm.RoleUser, Content: "Say hello."},
			}
			for range 2 {
				resp, err := c.Chat(t.Context(), llm.Request{Stream: stream, Messages: msgs}, nil)
				if err != nil {
					t.Fatalf("anthropic: %v (%q)", err, srv.Rejections())
				}
				want.Add(clientTokens(resp.Usage))
				msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Message.Content}, llm.Message{Role: llm.RoleUser, Content: "Again."})
			}
			var billed protocol.Tokens
			for _, u := range srv.Usages() {
				billed.Add(protocol.Tokens{Prompt: u.Input + u.CacheWrite + u.CacheRead, Completion: u.Output, Cached: u.CacheRead, CacheWrite: u.CacheWrite})
			}
			if billed != want || billed.Cached == 0 || billed.CacheWrite == 0 {
				t.Fatalf("the fake billed %+v (want cache reads and writes), the client read %+v", billed, want)
			}
			if got := counted(t, g); got != want {
				t.Errorf("counted %+v, want %+v", got, want)
			}
		})
	}
}

// A streamed chat request that does not ask for usage gets it asked for:
// the stream's last chunk then carries the bill, which the gateway counts.
func TestGatewayAsksForStreamedUsage(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithKey(realKey))
	srv.Enqueue(llmtest.Reply{Content: "hi", Usage: &llmtest.Usage{PromptTokens: 40, CompletionTokens: 2, TotalTokens: 42}})
	g, base, token, _ := start(t, srv.URL)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s (%q)", resp.StatusCode, raw, srv.Rejections())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].StreamOptions == nil || !reqs[0].StreamOptions.IncludeUsage {
		t.Errorf("the provider was not asked for the usage chunk: %+v", reqs)
	}
	if got := counted(t, g); got != (protocol.Tokens{Prompt: 40, Completion: 2}) {
		t.Errorf("counted %+v, want the bill 40+2", got)
	}
}

// Real providers' recorded streams (Anthropic with cache fields, OpenAI
// chat with cached_tokens, OpenRouter with its cost, the Responses API)
// replayed through the gateway: what it counts is what the real client
// reads from the same bytes.
func TestGatewayCountsRecordedTraffic(t *testing.T) {
	dir := llmtest.TrafficDir(t)
	suites := []struct {
		glob string
		api  string
	}{
		{"fantasy/TestAnthropicCommonWithCacheControl/*/*.yaml", llm.APIAnthropic},
		{"fantasy-caf105e7/TestAnthropicCommonWithCacheControl/*/*.yaml", llm.APIAnthropic},
		{"fantasy/TestOpenAICommon/openai-gpt-4o-mini/*.yaml", llm.APIChat},
		{"fantasy/TestOpenRouterCommon/*/*.yaml", llm.APIChat},
		{"fantasy/TestOpenAIResponsesCommon/openai-gpt-4o/*.yaml", llm.APIResponses},
	}
	total := 0
	for _, s := range suites {
		files, _ := filepath.Glob(filepath.Join(dir, s.glob))
		for _, f := range files {
			rel, _ := filepath.Rel(dir, f)
			t.Run(rel, func(t *testing.T) {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var c llmtest.Cassette
				if err := yaml.Unmarshal(raw, &c); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				var next atomic.Int32
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					i := int(next.Add(1)) - 1
					rec := c.Interactions[i].Response
					for k, vs := range rec.Headers {
						if strings.EqualFold(k, "Content-Type") {
							w.Header()[http.CanonicalHeaderKey(k)] = vs
						}
					}
					w.WriteHeader(rec.Code)
					_, _ = io.WriteString(w, rec.Body)
				}))
				t.Cleanup(up.Close)
				g, base, token, _ := start(t, up.URL+"/v1")
				cl := llmclient.New(llmclient.Config{API: s.api, Anthropic: anthropicmsg.New, BaseURL: base, APIKey: token, Model: "recorded", MaxRetries: 0})
				var want protocol.Tokens
				for _, in := range c.Interactions {
					if in.Response.Code != http.StatusOK {
						t.Fatalf("a recorded %d", in.Response.Code)
					}
					stream := strings.Contains(in.Request.Body, `"stream":true`)
					resp, _, err := chat(t, cl, stream)
					if err != nil {
						t.Fatalf("replay: %v", err)
					}
					want.Add(clientTokens(resp.Usage))
				}
				if want.Prompt == 0 {
					t.Fatalf("the client read no usage from the recording")
				}
				if got := counted(t, g); got != want {
					t.Errorf("counted %+v, the client read %+v", got, want)
				}
				total++
			})
		}
	}
	if total < 8 {
		t.Errorf("replayed %d recordings, want at least 8 (is the traffic folder complete?)", total)
	}
}

// A request the budget check refuses is answered 402 with the check's
// words, never reaches the provider, and the real client does not retry it.
func TestGatewayRefusesPastTheBudget(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithKey(realKey))
	srv.Enqueue(llmtest.Text("first"))
	g, base, token, _ := start(t, srv.URL)
	var asked atomic.Int32
	g.SetAdmit(func(name string) error {
		if asked.Add(1) == 1 {
			return nil
		}
		return errors.New("task " + name + ": token budget reached; resume with a larger --budget-tokens")
	})
	c := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: token, Model: "m", MaxRetries: 3})
	if _, _, err := chat(t, c, true); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	_, _, err := chat(t, c, true)
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != http.StatusPaymentRequired || le.Retriable ||
		!strings.Contains(le.Message, "budget reached") || !strings.Contains(le.Message, "--budget-tokens") {
		t.Fatalf("past the budget: %v, want a final 402 naming the budget and the fix", err)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the budget was checked %d times, want 2 (a retry would check again)", n)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests reached the provider, want 1", n)
	}
	// The body is an error both families of clients read.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Type != "error" || body.Error.Type != "budget_exceeded" {
		t.Errorf("body %+v (%v)", body, err)
	}
}
