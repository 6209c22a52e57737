package llmclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/codes"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/telemetry"
)

// Dialect is a wire API other than Chat Completions. The Client keeps what
// every dialect shares: sanitising, retries, timeouts, metering, tracing.
// Anthropic's lives in package anthropicmsg (Config.Anthropic), so that
// only what builds a client for it links the SDK.
type Dialect interface {
	// Provider names the API in traces (gen_ai.provider.name).
	Provider() string
	// Send makes one attempt. ctx carries the attempt's deadline and its
	// exchange record; a failure is returned as the dialect's library
	// reported it, for dialectError to classify.
	Send(ctx context.Context, r DialectRequest) (*llm.Response, error)
	// Classify fills what e needs from a failure of Send that carries a
	// server's answer (status, message, code); false when err is not one.
	Classify(err error, e *llm.Error) bool
}

// DialectRequest is one request in the project's terms, sanitised.
type DialectRequest struct {
	Model   string
	Sent    []llm.Message
	Tools   []llm.Tool
	Stream  bool
	OnToken func(string) // content deltas of a streaming request, or nil
}

// newDialect returns the dialect cfg.API asks for, nil for Chat Completions.
func newDialect(c *Client, doer HTTPDoer) Dialect {
	api, _, err := llm.ResolveAPI(c.cfg.API, c.cfg.BaseURL, c.cfg.Model)
	if err != nil {
		return badDialect{err: err}
	}
	switch api {
	case llm.APIAnthropic:
		if c.cfg.Anthropic == nil {
			return badDialect{err: errNoAnthropic}
		}
		return c.cfg.Anthropic(c.cfg, doer)
	case llm.APIResponses:
		return newResponses(c, doer)
	}
	return nil
}

// HTTPDoer is what the wire libraries send through (recordingDoer).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// badDialect reports a configuration the client cannot speak at every
// call: New never fails, so that commands that never call the model work.
type badDialect struct{ err error }

func (badDialect) Provider() string { return "unknown" }
func (d badDialect) Send(context.Context, DialectRequest) (*llm.Response, error) {
	return nil, d.err
}
func (badDialect) Classify(error, *llm.Error) bool { return false }

// chatDialect is Chat for the dialects other than Chat Completions.
func (c *Client) chatDialect(ctx context.Context, req llm.Request, onToken func(string)) (*llm.Response, error) {
	if c.cfg.APIKey == "" {
		if c.dialect.Provider() == "anthropic" {
			return nil, fmt.Errorf("llm %s: %w (for the anthropic api, ANTHROPIC_API_KEY serves too)", c.baseURL, llm.ErrNoAPIKey)
		}
		return nil, fmt.Errorf("llm %s: %w", c.baseURL, llm.ErrNoAPIKey)
	}
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	if model == "" {
		return nil, fmt.Errorf("llm %s: %w", c.baseURL, llm.ErrNoModel)
	}
	sent := llm.Sanitize(req.Messages)
	if len(sent) == 0 {
		return nil, fmt.Errorf("llm %s (model %s): %w", c.baseURL, model, llm.ErrNoMessages)
	}
	ctx, span := telemetry.StartClient(ctx, "chat "+model, telemetry.OperationName.String("chat"),
		telemetry.ProviderName.String(c.dialect.Provider()), telemetry.RequestModel.String(model))
	defer span.End()
	r := DialectRequest{Model: model, Sent: sent, Tools: req.Tools, Stream: req.Stream, OnToken: onToken}
	resp, err := c.retrying(ctx, model, func(ctx context.Context) (*llm.Response, error) {
		return c.dialectAttempt(ctx, r)
	})
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

// dialectAttempt is one try, bounded by RequestTimeout.
func (c *Client) dialectAttempt(ctx context.Context, r DialectRequest) (*llm.Response, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errAttemptDue)
	defer cancel()
	ctx, rec, cancelIdle := withExchange(ctx, nil, c.idle)
	defer cancelIdle(nil)
	resp, err := c.dialect.Send(ctx, r)
	if err != nil {
		return nil, c.dialectError(ctx, r.Model, rec, err)
	}
	resp.Message.Role = llm.RoleAssistant
	resp.Message.ToolCalls = c.normalizeCalls(resp.Message.ToolCalls)
	if resp.Usage.Prompt+resp.Usage.Completion == 0 {
		resp.Usage = llm.Usage{
			Prompt:     llm.EstimateTokens(r.Sent) + toolDefTokens(r.Tools),
			Completion: llm.EstimateTokens([]llm.Message{resp.Message}),
			Estimated:  true,
		}
	}
	return resp, nil
}

// dialectError is attemptError for the other dialects: the same *Error,
// so that the retry loop and the callers' checks work unchanged.
func (c *Client) dialectError(ctx context.Context, model string, rec *exchange, err error) error {
	if _, bad := c.dialect.(badDialect); bad {
		return fmt.Errorf("llm %s (model %s): %w", c.baseURL, model, err)
	}
	e := &llm.Error{BaseURL: c.baseURL, Model: model, Err: err}
	switch {
	case errors.Is(context.Cause(ctx), ErrIdle) || errors.Is(err, ErrIdle):
		e.Retriable, e.Message, e.Err = true, fmt.Sprintf("no data from the server for %s", c.idle), ErrIdle
	case errors.Is(context.Cause(ctx), errAttemptDue):
		e.Retriable, e.Message, e.Err = true, fmt.Sprintf("no complete answer within %s", c.timeout), errAttemptDue
	case c.dialect.Classify(err, e):
		if e.Status == 0 {
			e.Status = rec.status
		}
		e.Err = redactedError{msg: c.redact(err.Error()), err: err}
	case !rec.sent:
		// The library refused the request before sending it: a retry
		// would fail the same way.
		return fmt.Errorf("llm request to %s (model %s) not sent: %w", c.baseURL, model, err)
	default:
		e.Retriable, e.Message = true, err.Error()
	}
	return c.settle(e, rec)
}

// redactedError keeps the chain of a library's error (errors.As still
// finds it) while its text, which may quote a request, loses the key.
type redactedError struct {
	msg string
	err error
}

func (r redactedError) Error() string { return r.msg }
func (r redactedError) Unwrap() error { return r.err }

// toolDefTokens estimates what the tool definitions add to a prompt.
func toolDefTokens(tools []llm.Tool) int {
	n := 0
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return (n + 3) / 4
}

// ProviderState reads api's part of m.ProviderState into v; false when
// there is none (a message another dialect wrote). For the dialects.
func ProviderState(m llm.Message, api string, v any) bool {
	if len(m.ProviderState) == 0 {
		return false
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(m.ProviderState, &all) != nil || len(all[api]) == 0 {
		return false
	}
	return json.Unmarshal(all[api], v) == nil
}

// WithProviderState is a Message.ProviderState holding v under api.
func WithProviderState(api string, v any) json.RawMessage {
	raw, err := json.Marshal(map[string]any{api: v})
	if err != nil {
		return nil // v is built here from decoded JSON: cannot fail
	}
	return raw
}

// IdleOr is err, or ErrIdle when the stream's own idle timer cut it: the
// cause lives on the stream's context, which the caller does not see.
func IdleOr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrIdle) {
		return fmt.Errorf("%w: %w", ErrIdle, err)
	}
	return err
}
