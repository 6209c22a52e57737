// Package gateway serves the model API to the attempts of a run so that the
// provider's key never enters an attempt: each attempt holds a random token
// that is worth something only here and only while the attempt runs, and
// the gateway swaps it for the real key on the way to the provider.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Options configure a Gateway.
type Options struct {
	// Upstream is the provider's base URL as the client would use it
	// (e.g. https://api.openai.com/v1); requests keep their path, which
	// the client built from a base URL with the same path.
	Upstream string
	// Key is the provider's API key, sent upstream in place of a token.
	Key string
	// Transport reaches the upstream; nil is http.DefaultTransport's
	// settings in a transport of the gateway's own.
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// Gateway is the reverse proxy and its register of live tokens.
type Gateway struct {
	upstream *url.URL // scheme and host only: the path comes from the request
	base     string   // the upstream's base path, which every request must be under
	key      string
	proxy    *httputil.ReverseProxy
	log      *slog.Logger

	mu        sync.Mutex
	tokens    map[[32]byte]grant          // by the token's SHA-256
	usage     map[string]*protocol.Tokens // by the name tokens were issued to; kept after revocation
	admit     func(name string) error
	servers   []*http.Server
	listeners []net.Listener
}

// grant is one live token: the token itself for the constant-time check,
// and whom it was issued to, for the log.
type grant struct {
	token string
	name  string
}

// ErrBadUpstream: the upstream base URL is not an absolute http(s) URL.
var ErrBadUpstream = errors.New("gateway: upstream must be an absolute http(s) URL")

// New checks the options; nothing listens until Listen.
func New(opts Options) (*Gateway, error) {
	u, err := url.Parse(opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w, got %q", ErrBadUpstream, redactURL(opts.Upstream))
	}
	if opts.Key == "" {
		return nil, errors.New("gateway: no API key to put in the attempts' requests")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	transport := opts.Transport
	if transport == nil {
		// A transport of its own: the default one's idle pool would be
		// shared with the rest of planagent and its settings with tests.
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	g := &Gateway{
		upstream: &url.URL{Scheme: u.Scheme, Host: u.Host},
		base:     strings.TrimSuffix(u.Path, "/"),
		key:      opts.Key,
		log:      logger.With("component", "gateway"),
		tokens:   map[[32]byte]grant{},
		usage:    map[string]*protocol.Tokens{},
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(g.upstream) },
		Transport: transport,
		// -1: every write of the upstream is flushed at once, so streamed
		// chunks reach the agent as the provider sends them.
		FlushInterval:  -1,
		ErrorHandler:   g.upstreamFailed,
		ModifyResponse: g.count,
	}
	return g, nil
}

// Path is the base path the attempts' base URL must carry (the upstream's),
// so the path a client builds is the one the provider expects.
func (g *Gateway) Path() string { return g.base }

// Listen serves the gateway on addr (host:port; port 0 picks one) and
// returns the address it got. It can be called more than once (one
// listener per network the attempts reach it from).
func (g *Gateway) Listen(addr string) (*net.TCPAddr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second}
	g.mu.Lock()
	g.servers = append(g.servers, srv)
	g.listeners = append(g.listeners, l)
	g.mu.Unlock()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("the model gateway stopped serving", "addr", l.Addr().String(), "err", err)
		}
	}()
	return l.Addr().(*net.TCPAddr), nil
}

// Close stops every listener and ends the requests in flight; every token
// is revoked.
func (g *Gateway) Close() error {
	g.mu.Lock()
	servers := g.servers
	g.servers, g.listeners = nil, nil
	clear(g.tokens)
	g.mu.Unlock()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Issue makes a token for name (an attempt) and returns it with the
// function that revokes it; revoking twice is harmless. The token is 32
// random bytes in hex: nothing to guess, and nothing derived from the key.
func (g *Gateway) Issue(name string) (string, func(), error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("gateway: a token for %s: %w", name, err)
	}
	token := hex.EncodeToString(b[:])
	revoke, err := g.Grant(name, token)
	return token, revoke, err
}

// MinToken is the shortest token Grant takes: 128 bits in hex.
const MinToken = 32

// Grant registers token, made elsewhere, for name: the compose watcher's,
// which its service and the gateway's are given alike. It returns the
// function that revokes it.
func (g *Gateway) Grant(name, token string) (func(), error) {
	if len(token) < MinToken {
		return nil, fmt.Errorf("gateway: the token for %s is %d characters, at least %d random ones are needed (e.g. openssl rand -hex 32)", name, len(token), MinToken)
	}
	if token == g.key {
		return nil, fmt.Errorf("gateway: the token for %s is the provider's key: give the watcher a random token instead", name)
	}
	sum := sha256.Sum256([]byte(token))
	g.mu.Lock()
	g.tokens[sum] = grant{token: token, name: name}
	if g.usage[name] == nil {
		g.usage[name] = &protocol.Tokens{}
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			delete(g.tokens, sum)
			g.mu.Unlock()
		})
	}, nil
}

// maxRequestBody bounds what one request may send: far above any model's
// context window in JSON.
const maxRequestBody = 64 << 20

// authHeaders are where the dialects' clients put their key: OpenAI's
// bearer token, Anthropic's x-api-key, Azure's api-key.
var authHeaders = []string{"Authorization", "X-Api-Key", "Api-Key"}

// ServeHTTP checks the token, puts the key where the token was and passes
// the request on; the response comes back as the provider sends it.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.base != "" && r.URL.Path != g.base && !strings.HasPrefix(r.URL.Path, g.base+"/") {
		writeError(w, http.StatusNotFound, "not_found_error",
			fmt.Sprintf("codeagent model gateway: %s is not under the model API's base path %s", r.URL.Path, g.base))
		return
	}
	token, err := presented(r.Header)
	if err != nil {
		g.refuse(w, r, err.Error())
		return
	}
	name, ok := g.lookup(token)
	if !ok {
		g.refuse(w, r, "the token is not one of a running attempt (unknown, or revoked when its attempt ended)")
		return
	}
	if err := g.admitted(name); err != nil {
		g.log.Info("refused a model request past a budget", "attempt", name, "why", err)
		writeError(w, http.StatusPaymentRequired, "budget_exceeded", "codeagent model gateway: "+err.Error())
		return
	}
	// The request is read whole before it is sent on (a model request is
	// JSON of at most a context window; the answer is never buffered).
	// Streamed through instead, the body's end would be read by the
	// transport after the handler may have returned, and the server's
	// check for a closed connection would then race with the next request
	// on it (a stream cut with "unexpected EOF" about once in 3 000).
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error",
			fmt.Sprintf("codeagent model gateway: the request body could not be read (at most %d MiB): %v", maxRequestBody>>20, err))
		return
	}
	body = askForUsage(r.URL.Path, body)
	out := r.Clone(context.WithValue(r.Context(), meteredKey{}, metered{name: name, d: dialectOf(r.URL.Path)}))
	out.Body, out.ContentLength = http.NoBody, 0 // a GET stays without a body
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	for _, h := range authHeaders {
		if out.Header.Get(h) == "" {
			continue
		}
		if h == "Authorization" {
			out.Header.Set(h, "Bearer "+g.key)
		} else {
			out.Header.Set(h, g.key)
		}
	}
	g.log.Debug("forwarding", "attempt", name, "method", r.Method, "path", r.URL.Path)
	g.proxy.ServeHTTP(w, out)
}

// meteredKey carries a forwarded request's attempt and dialect to count,
// which its response is counted against.
type meteredKey struct{}

type metered struct {
	name string
	d    dialect
}

// count wraps a successful response's body so that its usage is booked
// on the attempt as it passes; an error answer bills nothing.
func (g *Gateway) count(resp *http.Response) error {
	m, ok := resp.Request.Context().Value(meteredKey{}).(metered)
	if !ok || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil
	}
	resp.Body = &counter{body: resp.Body, stream: isStream(resp.Header), length: resp.ContentLength, t: tally{d: m.d},
		book: func(delta protocol.Tokens) {
			g.mu.Lock()
			if u := g.usage[m.name]; u != nil {
				u.Add(delta)
			}
			g.mu.Unlock()
		}}
	return nil
}

// Usage is what the provider billed for the requests made with the tokens
// issued to name, so far; ok is false when no token was issued to name.
func (g *Gateway) Usage(name string) (protocol.Tokens, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	u, ok := g.usage[name]
	if !ok {
		return protocol.Tokens{}, false
	}
	return *u, true
}

// SetAdmit sets the check made before each request is forwarded: a
// non-nil error refuses the request with HTTP 402 (which clients do not
// retry) and the error's text, which should name the budget and the fix.
// The check runs on the gateway's goroutines.
func (g *Gateway) SetAdmit(admit func(name string) error) {
	g.mu.Lock()
	g.admit = admit
	g.mu.Unlock()
}

func (g *Gateway) admitted(name string) error {
	g.mu.Lock()
	admit := g.admit
	g.mu.Unlock()
	if admit == nil {
		return nil
	}
	return admit(name)
}

// presented is the token of the request: the same value in every auth
// header it sends (a client sending two different credentials is refused
// rather than guessed at).
func presented(h http.Header) (string, error) {
	var token string
	for _, name := range authHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if name == "Authorization" {
			t, ok := strings.CutPrefix(v, "Bearer ")
			if !ok {
				return "", errors.New("the Authorization header is not a bearer token")
			}
			v = t
		}
		if token != "" && v != token {
			return "", errors.New("the request carries different credentials in its auth headers")
		}
		token = v
	}
	if token == "" {
		return "", errors.New("no token: send the attempt's token as Authorization: Bearer, x-api-key or api-key")
	}
	return token, nil
}

// lookup finds a live token. The map is keyed by the token's hash, so its
// lookup's timing says nothing about the token; the final comparison is
// constant-time.
func (g *Gateway) lookup(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	g.mu.Lock()
	gr, ok := g.tokens[sum]
	g.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare([]byte(gr.token), []byte(token)) != 1 {
		return "", false
	}
	return gr.name, true
}

func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, why string) {
	g.log.Warn("refused a model request", "from", r.RemoteAddr, "path", r.URL.Path, "why", why)
	writeError(w, http.StatusUnauthorized, "authentication_error", "codeagent model gateway: "+why)
}

// upstreamFailed answers a request the provider could not be asked: the
// error names the host, not the key (the transport's errors never hold
// headers).
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the agent went away; nobody reads an answer
	}
	g.log.Warn("the model server did not answer the gateway", "host", g.upstream.Host, "err", err)
	// The header tells `codingagent probe` that the gateway answered but
	// the model server behind it did not: the way is broken further on.
	w.Header().Set(UpstreamHeader, "unreachable")
	writeError(w, http.StatusBadGateway, "api_error", fmt.Sprintf("codeagent model gateway: the model server at %s did not answer: %v",
		redactURL(g.upstream.String()+g.base), err))
}

// UpstreamHeader is set on the gateway's answer when the model server
// behind it could not be reached.
const UpstreamHeader = "Codeagent-Gateway-Upstream"

// writeError answers in a shape both families of clients read: OpenAI's
// error.message and error.code, Anthropic's type "error" with
// error.type and error.message.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "code": typ, "message": msg},
	})
}

// redactURL drops credentials from a URL for an error message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
