package llmclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llm"
)

// errNoAnthropic is a client built for Anthropic's API without its dialect:
// a mistake of the code that built it, reported at every call.
var errNoAnthropic = errors.New("this client was built without Anthropic's dialect (Config.Anthropic: anthropicmsg.New)")

var (
	// ErrIdle ends an attempt whose server sent nothing for IdleTimeout
	// (a stream's context cause, retried).
	ErrIdle       = errors.New("stream idle timeout")
	errAttemptDue = errors.New("request timeout")
	// ErrCutStream is a stream that ended before its answer did.
	ErrCutStream = errors.New("stream ended without a finish_reason (connection dropped?)")
)

// attemptError turns what one attempt returned into an *Error that says
// whether to retry, or into a plain error for mistakes on this side that a
// retry cannot fix.
func (c *Client) attemptError(ctx context.Context, model string, rec *exchange, err error) error {
	e := &llm.Error{BaseURL: c.baseURL, Model: model, Err: err}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.Is(context.Cause(ctx), ErrIdle):
		e.Retriable, e.Message, e.Err = true, fmt.Sprintf("no data from the server for %s", c.idle), ErrIdle
	case errors.Is(context.Cause(ctx), errAttemptDue):
		e.Retriable, e.Message, e.Err = true, fmt.Sprintf("no complete answer within %s", c.timeout), errAttemptDue
	case errors.As(err, &apiErr):
		e.Status = apiErr.HTTPStatusCode
		e.Message = apiErr.Message
		if code, ok := apiErr.Code.(string); ok {
			e.Code = code
		}
		if e.Status == 0 {
			// An error event inside a 200 stream: only the server's
			// own failures are worth another try.
			e.Status = rec.status
			e.Retriable = apiErr.Type == "server_error" || e.Code == "server_error"
		}
		e.Err = &openai.APIError{Code: apiErr.Code, Message: c.redact(apiErr.Message), Param: apiErr.Param,
			Type: apiErr.Type, HTTPStatus: apiErr.HTTPStatus, HTTPStatusCode: apiErr.HTTPStatusCode}
	case errors.As(err, &reqErr):
		e.Status = reqErr.HTTPStatusCode
		e.Message = BodyText(reqErr.Body)
		e.Err = &openai.RequestError{HTTPStatus: reqErr.HTTPStatus, HTTPStatusCode: reqErr.HTTPStatusCode,
			Err: reqErr.Err, Body: []byte(c.redact(string(reqErr.Body)))}
	case !rec.sent:
		// go-openai refused the request before sending it (a parameter
		// the model does not take): a retry would fail the same way.
		return fmt.Errorf("llm request to %s (model %s) not sent: %w", c.baseURL, model, err)
	default:
		// Connection refused or reset, a body cut short, a stream that
		// ended early: the kind of failure another attempt may not hit.
		e.Retriable, e.Message = true, err.Error()
	}
	return c.settle(e, rec)
}

func retriableStatus(status int, code string) bool {
	switch {
	case status == http.StatusTooManyRequests:
		// An exhausted quota comes as 429 too, but waiting does not refill it.
		return code != "insufficient_quota"
	case status == http.StatusRequestTimeout, status >= 500:
		return true
	}
	return false
}

// BodyText is a short one-line form of an error body that is not
// OpenAI-shaped (an HTML 502 page, a FastAPI detail).
func BodyText(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	const limit = 300
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

// redact removes the API key from text a server may have echoed.
func (c *Client) redact(s string) string {
	if c.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, "[redacted]")
}

// settle finishes an error of either wire: retriable by its status, the
// server's Retry-After, a message even without a body, the key redacted.
func (c *Client) settle(e *llm.Error, rec *exchange) *llm.Error {
	if e.Status >= 400 {
		e.Retriable = retriableStatus(e.Status, e.Code)
		e.RetryAfter = rec.retryAfter
	}
	if e.Message == "" && e.Status != 0 {
		e.Message = http.StatusText(e.Status)
	}
	e.Message = c.redact(e.Message)
	return e
}
