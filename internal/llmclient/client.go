// Package llmclient is the model client both programs use: Chat
// Completions through go-openai against any OpenAI-compatible server, or,
// chosen by Config.API, OpenAI's Responses API or Anthropic's Messages API
// (dialect.go; Anthropic's dialect is package anthropicmsg, handed over as
// Config.Anthropic so that only what builds a client for it links the
// SDK), with streaming tool calls, retries, timeouts, usage metering, a
// chat span per call (internal/telemetry) and the history sanitised
// (llm.Sanitize) before it is sent. The conversation's types are package
// llm's, which links none of the SDKs: only where a client is built (the
// commands' wiring, the tests that talk to a fake server) imports this
// package.
package llmclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/codes"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/telemetry"
)

// maxHonouredRetryAfter bounds how long Chat waits on a server's word; a
// longer Retry-After (a daily quota) comes back to the caller as an *Error.
const maxHonouredRetryAfter = 5 * time.Minute

// Client is safe for concurrent use.
type Client struct {
	cfg     Config
	api     *openai.Client
	baseURL string // for messages: user info removed
	timeout time.Duration
	idle    time.Duration
	meter   llm.Meter
	callSeq atomic.Int64 // numbers the tool call ids this client makes up
	dialect Dialect      // nil: Chat Completions through api
	profile llm.Profile  // what the server accepts (llmconf/profile.go)
	// profileErr is a bad Config.Compat, reported by the first Chat like a
	// missing key (config.Load reports it before).
	profileErr error
	// echoOff is set once the server answered 400 to reasoning the echo
	// profile sent back: it is sent none for the rest of this client's
	// life (the run's, or the attempt's).
	echoOff atomic.Bool
	// sleep waits out a backoff; tests replace it with a fake clock's so
	// that a schedule of tens of seconds takes none.
	sleep func(context.Context, time.Duration) error
}

// New builds a client. It never fails: a missing key is reported by the
// first Chat, so that commands that never call the model still work.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	cfg.RequestTimeout = orDefault(cfg.RequestTimeout, 10*time.Minute)
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, 90*time.Second)
	cfg.BackoffBase = orDefault(cfg.BackoffBase, time.Second)
	cfg.BackoffMax = orDefault(cfg.BackoffMax, 30*time.Second)
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	hc := cfg.HTTPClient
	if hc == nil {
		// No Client.Timeout: it would cut long streams. Deadlines come
		// from contexts, per attempt and between stream chunks.
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = recordingDoer{hc: hc, now: time.Now}
	// Proxies such as OpenRouter send comment lines as keep-alives while a
	// model thinks; go-openai fails a stream after this many in a row.
	oc.EmptyMessagesLimit = 1 << 20
	profile, _, perr := llm.ResolveProfile(cfg.BaseURL, cfg.Compat, cfg.ReasoningEffort)
	if perr != nil {
		profile, _, _ = llm.ResolveProfile(cfg.BaseURL, nil, "")
	}
	c := &Client{
		cfg:        cfg,
		api:        openai.NewClientWithConfig(oc),
		baseURL:    displayURL(cfg.BaseURL),
		timeout:    cfg.RequestTimeout,
		idle:       cfg.IdleTimeout,
		profile:    profile,
		profileErr: perr,
		sleep:      sleep,
	}
	c.dialect = newDialect(c, oc.HTTPClient)
	return c
}

// Profile is the provider profile this client sends by.
func (c *Client) Profile() llm.Profile { return c.profile }

// sendProfile is the profile of the next request: the echo profile sends
// no reasoning once the server refused it.
func (c *Client) sendProfile() wireProfile {
	p := c.profile
	if p.Reasoning == llm.ReasoningEcho && c.echoOff.Load() {
		p.Reasoning = llm.ReasoningNone
	}
	return wireProfile(p)
}

// refusesReasoning reports whether err is a server's 400 (or 422) that
// names a reasoning field sent back as one it does not take, rather than
// one it misses.
func refusesReasoning(err error) bool {
	var e *llm.Error
	if !errors.As(err, &e) || (e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity) {
		return false
	}
	m := strings.ToLower(e.Message)
	if strings.Contains(m, "missing") || strings.Contains(m, "required") {
		return false
	}
	m = strings.ReplaceAll(m, "reasoning_effort", "")
	return strings.Contains(m, "reasoning")
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// Model is the default model of this client.
func (c *Client) Model() string { return c.cfg.Model }

// Usage is the total over every successful call of this client.
func (c *Client) Usage() llm.Usage { return c.meter.Total() }

// Chat sends one request, retrying what is worth retrying, and returns the
// assistant's message. onToken, when not nil, receives content deltas of a
// streaming request as they arrive; after a retry it sees the new attempt's
// deltas from the start, so the Response is the authoritative text.
func (c *Client) Chat(ctx context.Context, req llm.Request, onToken func(string)) (*llm.Response, error) {
	if c.dialect != nil {
		return c.chatDialect(ctx, req, onToken)
	}
	if c.cfg.APIKey == "" {
		return nil, fmt.Errorf("llm %s: %w", c.baseURL, llm.ErrNoAPIKey)
	}
	if c.profileErr != nil {
		return nil, fmt.Errorf("llm %s: compat setting: %w", c.baseURL, c.profileErr)
	}
	creq, sent := c.request(req)
	if creq.Model == "" {
		return nil, fmt.Errorf("llm %s: %w", c.baseURL, llm.ErrNoModel)
	}
	if len(creq.Messages) == 0 {
		return nil, fmt.Errorf("llm %s (model %s): %w", c.baseURL, creq.Model, llm.ErrNoMessages)
	}
	profile := c.sendProfile()
	patch, err := profile.patch(sent, req, c.cfg.MaxTokens)
	if err != nil {
		return nil, fmt.Errorf("llm %s (model %s): %w", c.baseURL, creq.Model, err)
	}
	// One chat span per call, retries included; no message content in it.
	ctx, span := telemetry.StartClient(ctx, "chat "+creq.Model, telemetry.OperationName.String("chat"),
		telemetry.ProviderName.String("openai"), telemetry.RequestModel.String(creq.Model))
	defer span.End()
	cl := call{creq: creq, patch: patch, sent: sent}
	resp, err := c.retrying(ctx, creq.Model, func(ctx context.Context) (*llm.Response, error) {
		return c.attempt(ctx, cl, onToken)
	})
	if err != nil && profile.echoes(sent) && refusesReasoning(err) && ctx.Err() == nil {
		// The server refused the reasoning it sent: once without it, and
		// never again with it.
		c.echoOff.Store(true)
		if cl.patch, err = c.sendProfile().patch(sent, req, c.cfg.MaxTokens); err != nil {
			return nil, fmt.Errorf("llm %s (model %s): %w", c.baseURL, creq.Model, err)
		}
		resp, err = c.retrying(ctx, creq.Model, func(ctx context.Context) (*llm.Response, error) {
			return c.attempt(ctx, cl, onToken)
		})
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(telemetry.InputTokens.Int(resp.Usage.Prompt), telemetry.OutputTokens.Int(resp.Usage.Completion))
	if resp.FinishReason != "" {
		span.SetAttributes(telemetry.FinishReasons.StringSlice([]string{resp.FinishReason}))
	}
	return resp, nil
}

// call is one Chat Completions request as sent: go-openai's request, the
// profile's body rewrite of it, and the sanitised history (usage is
// estimated from it when the server reports none).
type call struct {
	creq  openai.ChatCompletionRequest
	patch *bodyPatch
	sent  []llm.Message
}

// retrying runs try (one attempt of a request to model) until it
// succeeds, fails for good or ctx ends.
func (c *Client) retrying(ctx context.Context, model string, try func(context.Context) (*llm.Response, error)) (*llm.Response, error) {
	// retries count against MaxRetries; step is the backoff's exponent,
	// which refused connections raise too; downSince is the first of the
	// refused connections in a row (DownGrace).
	var retries, step int
	var downSince time.Time
	for tries := 1; ; tries++ {
		resp, err := try(ctx)
		if err == nil {
			c.meter.Add(resp.Usage)
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("llm request to %s (model %s) stopped: %w", c.baseURL, model, ctx.Err())
		}
		var e *llm.Error
		if !errors.As(err, &e) || !e.Retriable {
			return nil, err
		}
		if e.RetryAfter > maxHonouredRetryAfter {
			e.Message += fmt.Sprintf(" (the server asks to wait %s: not retrying)", e.RetryAfter)
			return nil, e
		}
		down := c.cfg.DownGrace > 0 && e.Status == 0 && (llm.Unreachable(e.Err) || cutOff(e.Err))
		switch {
		case !down:
			downSince = time.Time{}
		case downSince.IsZero():
			downSince = time.Now()
		}
		var wait time.Duration
		switch {
		case down && time.Since(downSince) < c.cfg.DownGrace:
			// Nothing listens (planagent's gateway restarting): wait
			// without using up the retries, which are for a server that
			// answers badly, but not past the grace.
			wait = min(c.backoff(step, 0), c.cfg.DownGrace-time.Since(downSince))
		case down:
			e.Message += fmt.Sprintf(" (nothing listened for %s)", c.cfg.DownGrace)
			return nil, e
		case retries >= c.cfg.MaxRetries:
			e.Message += fmt.Sprintf(" (gave up after %d %s)", tries, plural(tries, "attempt"))
			return nil, e
		default:
			wait = c.backoff(step, e.RetryAfter)
			retries++
		}
		step++
		if c.cfg.OnRetry != nil {
			c.cfg.OnRetry(tries, wait, e)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("llm request to %s (model %s) stopped while waiting to retry after %w: %w", c.baseURL, model, e, err)
		}
	}
}

// cutOff reports whether err is a connection the server closed or reset
// under a request: with DownGrace, a gateway that went away mid-request
// (planagent killed), whose successor is waited for.
func cutOff(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// request builds go-openai's request; every history goes through Sanitize.
// sent is the sanitised history, from which usage is estimated when the
// server reports none. The fields that differ between providers (messages'
// extras, token limit, stream_options, …) are the profile's patch.
func (c *Client) request(req llm.Request) (creq openai.ChatCompletionRequest, sent []llm.Message) {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	sent = llm.Sanitize(req.Messages)
	creq = openai.ChatCompletionRequest{
		Model:    model,
		Messages: wireMessages(sent),
		Tools:    wireTools(req.Tools),
		Stream:   req.Stream,
	}
	return creq, sent
}

// backoff is exponential with jitter, but never shorter than what the
// server asked for. The n-th wait is drawn from [c/2, c] with c =
// BackoffBase·2^n capped at BackoffMax: the random half spreads clients
// that failed together (as full jitter does), the fixed half guarantees
// that the retries span a known time, so that a blip of a few seconds is
// outlasted every time rather than on average (full jitter's total can
// be near zero).
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := c.cfg.BackoffBase
	for range attempt {
		if ceiling >= c.cfg.BackoffMax {
			break
		}
		ceiling *= 2
	}
	ceiling = min(ceiling, c.cfg.BackoffMax)
	half := ceiling / 2
	wait := half + time.Duration(rand.Int64N(int64(ceiling-half)+1))
	return max(wait, retryAfter)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
