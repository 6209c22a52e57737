package llmclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func hello() llm.Request {
	return llm.Request{Messages: []llm.Message{userMsg("hello")}, Tools: tools}
}

func asError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want an *llm.Error", err, err)
	}
	return e
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := llmtest.New(t)
			s.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "1"}, llmtest.Text("done"))
			var waits []time.Duration
			c := newClient(t, s, func(cfg *llmclient.Config) {
				cfg.OnRetry = func(_ int, wait time.Duration, _ error) { waits = append(waits, wait) }
			})
			// The wait is the client's fake sleep: the DownGrace tests
			// sleep their backoffs for real.
			clock := &fakeClock{}
			llmclient.SetSleep(c, clock.sleep)
			req := hello()
			req.Stream = stream
			resp, err := c.Chat(t.Context(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "done" || len(s.Requests()) != 2 {
				t.Fatalf("content %q after %d requests", resp.Message.Content, len(s.Requests()))
			}
			if clock.elapsed() < time.Second || len(waits) != 1 || waits[0] < time.Second || len(clock.waits) != 1 || clock.waits[0] != waits[0] {
				t.Errorf("slept %v (backoffs %v), want one wait of at least the Retry-After of 1s", clock.waits, waits)
			}
		})
	}
}

func TestRetryTransientFailures(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	tests := []struct {
		name  string
		first llmtest.Reply
	}{
		{name: "500", first: llmtest.Reply{Status: 500}},
		{name: "503 non-OpenAI body", first: llmtest.Reply{Status: 503, ErrorBody: "<html><body>upstream unavailable</body></html>"}},
		{name: "stream cut before finish_reason", first: llmtest.Reply{Content: "a partial answer that stops", CutStream: true}},
		{name: "stream stalls", first: llmtest.Reply{Hang: true}},
		{name: "error event inside the stream", first: llmtest.Reply{Content: "some text", StreamError: "The server had an error while processing your request."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := llmtest.New(t)
			s.Enqueue(tt.first, llmtest.Text("complete"))
			// Long enough that a loaded machine does not stall the good answer.
			c := newClient(t, s, func(cfg *llmclient.Config) { cfg.IdleTimeout = 500 * time.Millisecond })
			req := hello()
			req.Stream = true
			var tokens strings.Builder
			resp, err := c.Chat(t.Context(), req, func(s string) { tokens.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "complete" || len(s.Requests()) != 2 {
				t.Errorf("content %q after %d requests", resp.Message.Content, len(s.Requests()))
			}
			if !strings.HasSuffix(tokens.String(), "complete") {
				t.Errorf("onToken saw %q", tokens.String())
			}
		})
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s := llmtest.New(t)
			s.Enqueue(llmtest.Reply{Status: status}, llmtest.Text("never"))
			_, err := newClient(t, s).Chat(t.Context(), hello(), nil)
			e := asError(t, err)
			if e.Status != status || e.Retriable || len(s.Requests()) != 1 {
				t.Errorf("Status %d Retriable %v after %d requests; want %d, false, 1", e.Status, e.Retriable, len(s.Requests()), status)
			}
		})
	}
	t.Run("429 insufficient_quota", func(t *testing.T) {
		s := llmtest.New(t)
		s.Enqueue(llmtest.Reply{Status: 429, ErrorBody: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`})
		_, err := newClient(t, s).Chat(t.Context(), hello(), nil)
		if e := asError(t, err); e.Retriable || len(s.Requests()) != 1 || e.Code != "insufficient_quota" {
			t.Errorf("Retriable %v, code %q after %d requests; a spent quota is not retried", e.Retriable, e.Code, len(s.Requests()))
		}
	})
}

func TestRetriesExhausted(t *testing.T) {
	s := llmtest.New(t)
	body := `{"error":{"message":"The server had an error processing your request.","type":"server_error","code":null}}`
	for range 3 {
		s.Enqueue(llmtest.Reply{Status: 500, ErrorBody: body})
	}
	c := newClient(t, s)
	_, err := c.Chat(t.Context(), hello(), nil)
	e := asError(t, err)
	if e.Status != 500 || !e.Retriable || len(s.Requests()) != 3 {
		t.Fatalf("Status %d Retriable %v after %d requests; want 500, true, 3", e.Status, e.Retriable, len(s.Requests()))
	}
	for _, want := range []string{s.URL, "test-model", "HTTP 500", "The server had an error processing your request.", "3 attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestErrorsNeverShowTheKey has servers echo the key back in the shapes
// they use; no error text may contain it.
func TestErrorsNeverShowTheKey(t *testing.T) {
	tests := []struct{ name, body string }{
		{name: "OpenAI-shaped", body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","code":"invalid_api_key"}}`},
		{name: "plain body", body: "<html>forbidden for key " + testKey + "</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t)
			s.Enqueue(llmtest.Reply{Status: 401, ErrorBody: tt.body})
			_, err := newClient(t, s).Chat(t.Context(), hello(), nil)
			if err == nil {
				t.Fatal("no error")
			}
			texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
			for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
				texts = append(texts, u.Error())
			}
			for _, text := range texts {
				if strings.Contains(text, testKey) {
					t.Fatalf("the API key leaked: %s", text)
				}
			}
			if !strings.Contains(err.Error(), "[redacted]") || !strings.Contains(err.Error(), "HTTP 401") {
				t.Errorf("error %q should keep the server's message with the key redacted", err)
			}
		})
	}
}

// TestFailedAttempts checks what one failed attempt reports when no retry
// is left.
func TestFailedAttempts(t *testing.T) {
	tests := []struct {
		name    string
		stream  bool
		reply   llmtest.Reply
		cfg     func(*llmclient.Config)
		wantMsg string
	}{
		{name: "idle between chunks", stream: true, reply: llmtest.Reply{Hang: true},
			cfg: func(c *llmclient.Config) { c.IdleTimeout = 100 * time.Millisecond }, wantMsg: "no data from the server for 100ms"},
		{name: "whole request", reply: llmtest.Reply{Hang: true},
			cfg: func(c *llmclient.Config) { c.RequestTimeout = 100 * time.Millisecond }, wantMsg: "no complete answer within 100ms"},
		{name: "stream cut before finish_reason", stream: true, reply: llmtest.Reply{Content: "half of an answer", CutStream: true},
			cfg: func(*llmclient.Config) {}, wantMsg: "stream ended without a finish_reason"},
		{name: "error event inside the stream", stream: true, reply: llmtest.Reply{Content: "some text", StreamError: "generation failed"},
			cfg: func(*llmclient.Config) {}, wantMsg: "HTTP 200: generation failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t)
			s.Enqueue(tt.reply)
			c := newClient(t, s, tt.cfg, func(c *llmclient.Config) { c.MaxRetries = 0 })
			req := hello()
			req.Stream = tt.stream
			_, err := c.Chat(t.Context(), req, nil)
			e := asError(t, err)
			if !e.Retriable || !strings.Contains(err.Error(), tt.wantMsg) || !strings.Contains(err.Error(), s.URL) {
				t.Errorf("err = %v (retriable %v), want a retriable error naming the server and saying %q", err, e.Retriable, tt.wantMsg)
			}
		})
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	s := llmtest.New(t)
	s.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "60"})
	ctx, cancel := context.WithCancel(t.Context())
	c := newClient(t, s, func(cfg *llmclient.Config) {
		cfg.OnRetry = func(int, time.Duration, error) { cancel() }
	})
	start := time.Now()
	_, err := c.Chat(ctx, hello(), nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "HTTP 429") {
		t.Errorf("err %q should say what it was waiting to retry", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	s := llmtest.New(t)
	url := s.URL
	s.Close()
	c := llmclient.New(llmclient.Config{BaseURL: url, APIKey: testKey, Model: "m", MaxRetries: 1, BackoffBase: time.Millisecond})
	_, err := c.Chat(t.Context(), hello(), nil)
	e := asError(t, err)
	if e.Status != 0 || !e.Retriable || !strings.Contains(err.Error(), "connection failed") || !strings.Contains(err.Error(), url) {
		t.Errorf("err = %v (status %d, retriable %v)", err, e.Status, e.Retriable)
	}
}

func TestContextLength(t *testing.T) {
	s := llmtest.New(t, llmtest.WithContextWindow(50))
	_, err := newClient(t, s).Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg(strings.Repeat("word ", 100))}}, nil)
	if !llm.IsContextLength(err) {
		t.Fatalf("IsContextLength(%v) = false", err)
	}
	if len(s.Requests()) != 1 {
		t.Errorf("%d requests: a prompt over the window is not retried", len(s.Requests()))
	}

	others := []error{
		nil,
		errors.New("maximum context length"),
		&llm.Error{Status: 500, Message: "maximum context length"},
		&llm.Error{Status: 400, Message: "Invalid parameter"},
	}
	for _, err := range others {
		if llm.IsContextLength(err) {
			t.Errorf("IsContextLength(%v) = true", err)
		}
	}
	vllm := fmt.Errorf("wrapped: %w", &llm.Error{Status: 400, Message: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens"})
	if !llm.IsContextLength(vllm) {
		t.Errorf("IsContextLength(%v) = false", vllm)
	}
}

func TestLongRetryAfterIsReturned(t *testing.T) {
	s := llmtest.New(t)
	s.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "3600"}, llmtest.Text("never"))
	start := time.Now()
	_, err := newClient(t, s).Chat(t.Context(), hello(), nil)
	e := asError(t, err)
	if !e.Retriable || e.RetryAfter != time.Hour || len(s.Requests()) != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("err = %v (retriable %v, RetryAfter %v) after %d requests: an hour's wait goes back to the caller",
			err, e.Retriable, e.RetryAfter, len(s.Requests()))
	}
}

// TestSetupErrors tells the failures a person must fix in the configuration
// (callers exit 2 for them) from the ones a task may hit, and checks each
// names what to check.
func TestSetupErrors(t *testing.T) {
	down := llmtest.New(t)
	downURL := down.URL
	down.Close()
	tests := []struct {
		name     string
		edit     func(cfg *llmclient.Config, s *llmtest.Server)
		reply    llmtest.Reply
		setup    bool
		mentions string
	}{
		{name: "wrong key", edit: func(cfg *llmclient.Config, _ *llmtest.Server) { cfg.APIKey = "sk-wrong-key-000" },
			setup: true, mentions: "check OPENAI_API_KEY"},
		{name: "base URL without /v1", edit: func(cfg *llmclient.Config, s *llmtest.Server) { cfg.BaseURL = strings.TrimSuffix(s.URL, "/v1") },
			setup: true, mentions: "check OPENAI_BASE_URL (most servers want it to end in /v1) and OPENAI_MODEL"},
		{name: "unknown model", reply: llmtest.Reply{Status: 404, ErrorBody: `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`},
			setup: true, mentions: "and OPENAI_MODEL"},
		{name: "key not allowed", reply: llmtest.Reply{Status: 403}, setup: true, mentions: "may use model test-model"},
		{name: "server not running", edit: func(cfg *llmclient.Config, _ *llmtest.Server) { cfg.BaseURL = downURL },
			setup: true, mentions: "is the server running? check OPENAI_BASE_URL"},
		{name: "no key", edit: func(cfg *llmclient.Config, _ *llmtest.Server) { cfg.APIKey = "" }, setup: true, mentions: "OPENAI_API_KEY"},
		{name: "bad request", reply: llmtest.Reply{Status: 400}},
		{name: "server error", reply: llmtest.Reply{Status: 500}},
		{name: "stream cut", reply: llmtest.Reply{Content: "half an answer", CutStream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.WithKey(testKey))
			s.Handle(func(llmtest.Request) llmtest.Reply { return tt.reply })
			c := newClient(t, s, func(cfg *llmclient.Config) {
				cfg.MaxRetries = 0
				if tt.edit != nil {
					tt.edit(cfg, s)
				}
			})
			_, err := c.Chat(t.Context(), llm.Request{Messages: []llm.Message{userMsg("hi")}, Stream: true}, nil)
			if err == nil {
				t.Fatal("Chat succeeded")
			}
			if got := llm.IsSetup(err); got != tt.setup {
				t.Errorf("IsSetup(%v) = %v, want %v", err, got, tt.setup)
			}
			if !strings.Contains(err.Error(), tt.mentions) {
				t.Errorf("error %q does not say %q", err, tt.mentions)
			}
			if !tt.setup && strings.Contains(err.Error(), "; check") {
				t.Errorf("error %q gives a configuration hint for a failure that is not one", err)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "sk-wrong-key-000") {
				t.Errorf("error %q shows a key", err)
			}
		})
	}
}

// With DownGrace a server that refuses connections is waited for past
// MaxRetries (planagent's gateway restarting at the same address), and
// the request goes through once it listens.
func TestDownGraceWaitsForTheServer(t *testing.T) {
	t.Parallel() // waits for a server to come up: overlapped with the other waiting tests
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			first := llmtest.New(t)
			addr := fmt.Sprintf("127.0.0.1:%d", first.Port())
			url := first.URL
			first.Close()
			var refused atomic.Int32
			pastRetries := make(chan struct{})
			c := llmclient.New(llmclient.Config{BaseURL: url, APIKey: testKey, Model: "m", MaxRetries: 1,
				BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, DownGrace: time.Minute,
				OnRetry: func(int, time.Duration, error) {
					if refused.Add(1) == 3 {
						close(pastRetries)
					}
				}})
			up := make(chan *llmtest.Server, 1)
			go func() {
				// Three refusals are past MaxRetries (1): only the grace
				// keeps the request alive this long. Waiting for them,
				// not for a second, keeps the test short and still says so.
				select {
				case <-pastRetries:
				case <-t.Context().Done():
					up <- nil
					return
				}
				s := llmtest.New(t, llmtest.WithAddr(addr))
				s.Enqueue(llmtest.Text("back"))
				up <- s
			}()
			req := hello()
			req.Stream = stream
			resp, err := c.Chat(t.Context(), req, nil)
			if err != nil {
				t.Fatalf("err %v after %d refused connections, want the answer of the server that came up", err, refused.Load())
			}
			s := <-up
			if resp.Message.Content != "back" || len(s.Requests()) != 1 || refused.Load() < 3 {
				t.Errorf("content %q, %d requests, %d refused: want the one answer after several refusals", resp.Message.Content, len(s.Requests()), refused.Load())
			}
		})
	}
}

// The grace is bounded: nothing listening for longer fails the request,
// and says for how long it waited.
func TestDownGraceIsBounded(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	s := llmtest.New(t)
	url := s.URL
	s.Close()
	c := llmclient.New(llmclient.Config{BaseURL: url, APIKey: testKey, Model: "m", MaxRetries: 0,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond, DownGrace: 300 * time.Millisecond})
	start := time.Now()
	_, err := c.Chat(t.Context(), hello(), nil)
	took := time.Since(start)
	e := asError(t, err)
	if e.Status != 0 || !strings.Contains(err.Error(), "nothing listened for 300ms") {
		t.Errorf("err = %v, want a connection failure naming the grace", err)
	}
	if took < 300*time.Millisecond || took > 30*time.Second {
		t.Errorf("gave up after %s, want the grace of 300ms (and not much more)", took)
	}
}

// A server that closes the connection under each request (a gateway
// killed mid-request) is waited for too, past MaxRetries 0, until its
// successor answers at the same address.
func TestDownGraceOutlastsCutConnections(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	var cut atomic.Int32
	pastRetries := make(chan struct{})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 512))
			if cut.Add(1) == 3 {
				close(pastRetries)
			}
			c.Close()
		}
	}()
	c := llmclient.New(llmclient.Config{BaseURL: "http://" + addr + "/v1", APIKey: testKey, Model: "m", MaxRetries: 0,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, DownGrace: time.Minute})
	up := make(chan *llmtest.Server, 1)
	go func() {
		// Three cut requests are past MaxRetries (0): the successor
		// comes up once the grace alone has kept the request alive.
		select {
		case <-pastRetries:
		case <-t.Context().Done():
			up <- nil
			return
		}
		l.Close()
		s := llmtest.New(t, llmtest.WithAddr(addr))
		s.Enqueue(llmtest.Text("back"))
		up <- s
	}()
	resp, err := c.Chat(t.Context(), hello(), nil)
	if err != nil {
		t.Fatalf("err %v after %d cut connections, want the successor's answer", err, cut.Load())
	}
	s := <-up
	if resp.Message.Content != "back" || len(s.Requests()) != 1 || cut.Load() < 2 {
		t.Errorf("content %q, %d requests, %d cut: want the answer after several cut connections", resp.Message.Content, len(s.Requests()), cut.Load())
	}
}
