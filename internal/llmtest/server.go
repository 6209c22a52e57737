// Package llmtest is a strict OpenAI-compatible chat completions server for
// tests: it answers from a script, streams like the real API, and rejects
// with HTTP 400 what the real API rejects, so tests drive the real go-openai
// client end to end.
package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running scripted model.
type Server struct {
	URL string // base URL including /v1, e.g. http://127.0.0.1:PORT/v1

	ts        *httptest.Server
	opts      options
	done      chan struct{} // closed by Close so hanging handlers let it finish
	closeOnce sync.Once

	mu         sync.Mutex
	queue      []Reply
	handle     func(Request) Reply
	requests   []Request
	rejections []string
	served     map[string]*served // what a Mode's answers carry that must come back
}

type options struct {
	addr          string
	key           string
	chunkSize     int
	contextWindow int
	quirks        Quirk
	mode          Mode
}

// Option configures a Server.
type Option func(*options)

// WithAddr sets the listen address, e.g. "0.0.0.0:0" so that a container
// can reach the server through the host gateway. Default 127.0.0.1:0.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithKey requires this bearer token. By default any non-empty one passes.
func WithKey(key string) Option { return func(o *options) { o.key = key } }

// WithChunkSize streams content and arguments in n-character pieces (default 8).
func WithChunkSize(n int) Option { return func(o *options) { o.chunkSize = n } }

// WithContextWindow rejects prompts estimated (chars/4) above tokens, as a
// model with that window would.
func WithContextWindow(tokens int) Option { return func(o *options) { o.contextWindow = tokens } }

// WithQuirks applies quirks to every reply.
func WithQuirks(q Quirk) Option { return func(o *options) { o.quirks = q } }

// New starts a server that t.Cleanup closes.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a server outside a test (benchmarks, e2e commands); the
// caller closes it. It panics when it cannot listen, as httptest does.
func NewServer(opts ...Option) *Server {
	s, err := start(opts)
	if err != nil {
		panic(err)
	}
	return s
}

func start(opts []Option) (*Server, error) {
	o := options{addr: "127.0.0.1:0", chunkSize: 8}
	for _, opt := range opts {
		opt(&o)
	}
	if o.chunkSize < 1 {
		o.chunkSize = 1
	}
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen on %s: %w", o.addr, err)
	}
	s := &Server{opts: o, done: make(chan struct{})}
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.ts.Listener.Close()
	s.ts.Listener = l
	s.ts.Start()
	port := l.Addr().(*net.TCPAddr).Port
	// A server listening on every interface is still reached locally on loopback.
	s.URL = fmt.Sprintf("http://127.0.0.1:%d/v1", port)
	if host, _, _ := net.SplitHostPort(o.addr); host != "" && !net.ParseIP(host).IsUnspecified() {
		s.URL = "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/v1"
	}
	return s, nil
}

// Port is the TCP port the server listens on (for URLs through another host
// name, such as host.docker.internal).
func (s *Server) Port() int { return s.ts.Listener.Addr().(*net.TCPAddr).Port }

// Close stops the server, ending hanging and delayed replies first.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.ts.Close()
	})
}

// Enqueue appends replies to the script; requests take them in order.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r...)
}

// Handle answers requests dynamically once the script is used up. f may be
// called from several requests at once.
func (s *Server) Handle(f func(req Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle = f
}

// Pending is the number of scripted replies not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every request received so far, rejected ones included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Rejections returns the errors the server answered on its own (400, 401,
// 404, and 500 for a request with no scripted reply), each with its reason.
// Tests assert it is empty.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejections...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		s.models(w, r)
		return
	}
	if r.URL.Path == "/props" || strings.HasPrefix(r.URL.Path, "/api/") {
		// Other servers' own endpoints, which planagent's local-server
		// probes ask at start: OpenAI has none of them. Not a rejection of
		// what the client sent for a completion.
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.reject(w, 0, http.StatusNotFound, &ValidationError{
			Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Code: "unknown_url",
		})
		return
	}
	if err := s.authorize(r); err != nil {
		s.reject(w, 0, http.StatusUnauthorized, err)
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.reject(w, 0, http.StatusBadRequest, &ValidationError{
			Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.) " + err.Error(),
		})
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()

	if err := Validate(req); err != nil {
		s.reject(w, n, http.StatusBadRequest, err)
		return
	}
	if err := s.validateMode(req); err != nil {
		s.reject(w, n, http.StatusBadRequest, err)
		return
	}
	if err := s.checkWindow(req); err != nil {
		s.reject(w, n, http.StatusBadRequest, err)
		return
	}
	reply, ok := s.next(req)
	if !ok {
		s.reject(w, n, http.StatusInternalServerError, &ValidationError{
			Message: fmt.Sprintf("llmtest: no scripted reply for request %d", n), Code: "server_error",
		})
		return
	}
	reply.Quirks |= s.opts.quirks
	s.answer(w, r, n, req, reply)
}

func (s *Server) authorize(r *http.Request) error {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || token == "":
		return &ValidationError{
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
		}
	case s.opts.key != "" && token != s.opts.key:
		// The real API echoes part of the key; this one never does, so a
		// leak found in a test is the client's.
		return &ValidationError{Message: "Incorrect API key provided.", Code: "invalid_api_key"}
	}
	return nil
}

func (s *Server) checkWindow(req Request) error {
	if s.opts.contextWindow <= 0 {
		return nil
	}
	tokens := estimate(req.Messages)
	if tokens <= s.opts.contextWindow {
		return nil
	}
	return &ValidationError{
		Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.opts.contextWindow, tokens),
		Param:   "messages",
		Code:    "context_length_exceeded",
	}
}

func (s *Server) next(req Request) (Reply, bool) {
	s.mu.Lock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return r, true
	}
	h := s.handle
	s.mu.Unlock()
	if h == nil {
		return Reply{}, false
	}
	return h(req), true
}

// reject answers an error of the server's own and records why; n is the
// request number, 0 before the request was decoded.
func (s *Server) reject(w http.ResponseWriter, n, status int, err error) {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		ve = &ValidationError{Message: err.Error()}
	}
	s.mu.Lock()
	s.rejections = append(s.rejections, fmt.Sprintf("request %d: HTTP %d: %s", n, status, ve.Error()))
	s.mu.Unlock()
	writeError(w, status, ve)
}

func writeError(w http.ResponseWriter, status int, ve *ValidationError) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	body := map[string]any{"error": map[string]any{
		"message": ve.Message,
		"type":    typ,
		"param":   nullable(ve.Param),
		"code":    nullable(ve.Code),
	}}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// wait pauses for d; false when the request or the server ended first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

// models answers GET /v1/models as the real API does: the list of models,
// after the same authorization as a completion (planagent's preflight probe
// and other clients that check a server before using it).
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r); err != nil {
		s.reject(w, 0, http.StatusUnauthorized, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"test-model","object":"model","created":0,"owned_by":"llmtest"}]}`)
}
