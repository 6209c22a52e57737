package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmclient/anthropicmsg"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
	"github.com/codeagent/codeagent/internal/llmtest/responsestest"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
)

const realKey = "sk-real-provider-key-0123456789-NEVER-IN-AN-ATTEMPT"

// seen records the auth headers of every request the gateway sent
// upstream: what the provider receives.
type seen struct {
	mu      sync.Mutex
	headers []http.Header
	next    http.RoundTripper
}

func (s *seen) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	return s.next.RoundTrip(r)
}

// check fails unless every request upstream carried the real key and no
// token anywhere in its headers.
func (s *seen) check(t *testing.T, tokens ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.headers) == 0 {
		t.Fatal("no request reached the upstream")
	}
	for i, h := range s.headers {
		withKey := false
		for name, vs := range h {
			for _, v := range vs {
				for _, tok := range tokens {
					if strings.Contains(v, tok) {
						t.Errorf("request %d: the upstream saw the token in %s", i, name)
					}
				}
				if strings.Contains(v, realKey) {
					withKey = true
				}
			}
		}
		if !withKey {
			t.Errorf("request %d: the upstream did not get the real key: %v", i, h)
		}
	}
}

// start runs a gateway to upstream on loopback and returns its base URL
// (the upstream's path on the gateway's address) and a token.
func start(t testing.TB, upstream string) (*gateway.Gateway, string, string, *seen) {
	t.Helper()
	rec := &seen{next: http.DefaultTransport.(*http.Transport).Clone()}
	g, err := gateway.New(gateway.Options{Upstream: upstream, Key: realKey, Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	addr, err := g.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	token, revoke, err := g.Issue("t1.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(revoke)
	return g, "http://" + addr.String() + g.Path(), token, rec
}

func chat(t *testing.T, c *llmclient.Client, stream bool) (*llm.Response, []string, error) {
	t.Helper()
	var deltas []string
	resp, err := c.Chat(t.Context(), llm.Request{Stream: stream, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a coding agent."},
		{Role: llm.RoleUser, Content: "Say hello."},
	}}, func(s string) { deltas = append(deltas, s) })
	return resp, deltas, err
}

func TestGatewayDialects(t *testing.T) {
	const answer = "hello from the provider, through the gateway"
	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "plain", true: "stream"}[stream]
		t.Run("chat/"+mode, func(t *testing.T) {
			// WithKey: the strict server refuses anything but the real key.
			srv := llmtest.New(t, llmtest.WithKey(realKey), llmtest.WithChunkSize(4))
			srv.Enqueue(llmtest.Text(answer))
			_, base, token, rec := start(t, srv.URL)
			resp, deltas, err := chat(t, llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: token, Model: "test-model"}), stream)
			if err != nil {
				t.Fatalf("chat through the gateway: %v (server rejections %q)", err, srv.Rejections())
			}
			if resp.Message.Content != answer {
				t.Errorf("answer %q", resp.Message.Content)
			}
			if stream && len(deltas) < 2 {
				t.Errorf("streamed in %d deltas, want the server's chunks", len(deltas))
			}
			rec.check(t, token)
		})
		t.Run("responses/"+mode, func(t *testing.T) {
			srv := responsestest.New(t, responsestest.Reply{Text: answer})
			_, base, token, rec := start(t, srv.URL+"/v1")
			resp, _, err := chat(t, llmclient.New(llmclient.Config{API: llm.APIResponses, BaseURL: base, APIKey: token, Model: "gpt-5-codex"}), stream)
			if err != nil {
				t.Fatalf("responses through the gateway: %v (%q)", err, srv.Rejections())
			}
			if resp.Message.Content != answer {
				t.Errorf("answer %q", resp.Message.Content)
			}
			rec.check(t, token)
		})
		t.Run("anthropic/"+mode, func(t *testing.T) {
			srv := anthropictest.New(t, anthropictest.Reply{Text: answer})
			_, base, token, rec := start(t, srv.URL+"/v1")
			resp, _, err := chat(t, llmclient.New(llmclient.Config{API: llm.APIAnthropic, Anthropic: anthropicmsg.New, BaseURL: base, APIKey: token, Model: "claude-test"}), stream)
			if err != nil {
				t.Fatalf("anthropic through the gateway: %v (%q)", err, srv.Rejections())
			}
			if resp.Message.Content != answer {
				t.Errorf("answer %q", resp.Message.Content)
			}
			rec.check(t, token)
		})
	}
}

func TestGatewayRefusesOtherTokens(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithKey(realKey))
	g, base, token, _ := start(t, srv.URL)
	other, revokeOther, err := g.Issue("t2.1")
	if err != nil {
		t.Fatal(err)
	}
	revokeOther()
	cases := []struct {
		name   string
		header http.Header
		want   string
	}{
		{"none", http.Header{}, "no token"},
		{"unknown", http.Header{"Authorization": {"Bearer " + strings.Repeat("0", 64)}}, "not one of a running attempt"},
		{"revoked", http.Header{"Authorization": {"Bearer " + other}}, "revoked"},
		{"the real key", http.Header{"Authorization": {"Bearer " + realKey}}, "not one of a running attempt"},
		{"x-api-key unknown", http.Header{"X-Api-Key": {other}}, "not one of a running attempt"},
		{"two credentials", http.Header{"Authorization": {"Bearer " + token}, "Api-Key": {other}}, "different credentials"},
		{"basic auth", http.Header{"Authorization": {"Basic " + token}}, "not a bearer token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(`{}`))
			req.Header = tc.header
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("status %d, body not JSON: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body.Error.Message, tc.want) || body.Type != "error" {
				t.Errorf("status %d, error %+v; want 401 naming %q", resp.StatusCode, body, tc.want)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the model server", n)
	}
	// The real client sees the refusal as an authentication failure.
	c := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: other, Model: "m", MaxRetries: 0})
	_, _, err = chat(t, c, false)
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != http.StatusUnauthorized || le.Retriable {
		t.Errorf("client error %v, want a final 401", err)
	}
}

func TestGatewayRevokedTokenEndsAtOnce(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithKey(realKey))
	srv.Enqueue(llmtest.Text("one"), llmtest.Text("two"))
	g, base, _, _ := start(t, srv.URL)
	token, revoke, err := g.Issue("t3.1")
	if err != nil {
		t.Fatal(err)
	}
	c := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: token, Model: "m"})
	if _, _, err := chat(t, c, false); err != nil {
		t.Fatalf("while the attempt runs: %v", err)
	}
	revoke()
	if _, _, err := chat(t, c, false); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("after the attempt ended: %v, want 401", err)
	}
}

func TestGatewayOutsideTheBasePath(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithKey(realKey))
	_, base, token, _ := start(t, srv.URL)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(base, "/v1")+"/admin", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404 for a path outside the model API", resp.StatusCode)
	}
}

// The upstream sends the second chunk only once the client has read the
// first through the gateway: a gateway that buffered would deadlock (and
// time out) here.
func TestGatewayStreamsChunksAsTheyCome(t *testing.T) {
	read := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+realKey {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			return // the test fails on its side
		}
		fmt.Fprint(w, "data: second\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(upstream.Close)
	_, base, token, _ := start(t, upstream.URL+"/v1")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(`{"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() != "" {
				lines <- sc.Text()
			}
		}
	}()
	select {
	case l := <-lines:
		if l != "data: first" {
			t.Fatalf("first line %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first chunk did not come through before the stream ended: the gateway buffers")
	}
	close(read)
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if strings.Join(rest, "|") != "data: second|data: [DONE]" {
		t.Errorf("rest of the stream %q", rest)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}

func TestGatewayNewRefuses(t *testing.T) {
	for _, o := range []gateway.Options{
		{Upstream: "localhost:8000/v1", Key: "k"},
		{Upstream: "ftp://host/v1", Key: "k"},
		{Upstream: "https://api.openai.com/v1"},
	} {
		if _, err := gateway.New(o); err == nil {
			t.Errorf("New(%q, key set %v) accepted", o.Upstream, o.Key != "")
		}
	}
}

// A token made elsewhere (the compose watcher's) is taken once granted,
// and refused when short or the key itself.
func TestGatewayGrant(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithKey(realKey))
	srv.Enqueue(llmtest.Text("granted"))
	g, base, _, rec := start(t, srv.URL)
	for _, bad := range []string{"short", realKey} {
		if _, err := g.Grant("watcher", bad); err == nil {
			t.Errorf("Grant took %q", bad)
		}
	}
	token := strings.Repeat("ab", gateway.MinToken/2)
	revoke, err := g.Grant("watcher", token)
	if err != nil {
		t.Fatal(err)
	}
	c := llmclient.New(llmclient.Config{API: llm.APIChat, BaseURL: base, APIKey: token, Model: "m", MaxRetries: 0})
	if resp, _, err := chat(t, c, false); err != nil || resp.Message.Content != "granted" {
		t.Fatalf("with the granted token: %v", err)
	}
	rec.check(t, token)
	revoke()
	if _, _, err := chat(t, c, false); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("after revoking: %v, want 401", err)
	}
}
