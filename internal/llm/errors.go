package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

var (
	// ErrNoAPIKey is returned by Chat when Config.APIKey is empty.
	ErrNoAPIKey = errors.New("no API key: set OPENAI_API_KEY in the environment or the config file (local servers such as Ollama accept any non-empty value)")
	// ErrNoModel is returned by Chat when neither the request nor Config names a model.
	ErrNoModel = errors.New("no model: set OPENAI_MODEL in the environment or the config file")
	// ErrNoMessages is returned by Chat when nothing is left to send after Sanitize.
	ErrNoMessages = errors.New("no messages to send: the conversation is empty after sanitising")
)

var (
	errIdle       = errors.New("stream idle timeout")
	errAttemptDue = errors.New("request timeout")
	errCutStream  = errors.New("stream ended without a finish_reason (connection dropped?)")
)

// IsContextLength reports whether the server refused the request because
// the prompt does not fit the model's context window, so the caller should
// compact the conversation and try again rather than fail.
func IsContextLength(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 {
		return false
	}
	if e.Code == "context_length_exceeded" {
		return true
	}
	msg := strings.ToLower(e.Message)
	for _, s := range []string{
		"maximum context length", // OpenAI, vLLM
		"context length",         // llama.cpp, LiteLLM
		"context window",
		"prompt is too long", // Anthropic through proxies
		"too many tokens",
		"input is too long",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// IsSetup reports whether err says the server cannot be used as configured:
// not reachable, the key refused, the URL or the model unknown, tool calls
// left unparsed in the text (ToolCallAsTextError). Another
// attempt, or another task, would fail the same way; the person has to fix
// the configuration (callers exit 2 for it).
func IsSetup(err error) bool {
	if errors.Is(err, ErrNoAPIKey) || errors.Is(err, ErrNoModel) || IsToolCallAsText(err) {
		return true
	}
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	case 0:
		return unreachable(e.Err)
	}
	return false
}

// unreachable reports whether err is a failure to connect at all (refused,
// no route, unknown host), as opposed to a connection that broke.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// hint says what to check for the failures a person can fix, "" otherwise.
func (e *Error) hint() string {
	switch {
	case e.Status == http.StatusUnauthorized && e.Code == "authentication_error": // Anthropic's error type
		return "check ANTHROPIC_API_KEY (or api_key in the config file)"
	case e.Status == http.StatusNotFound && e.Code == "not_found_error":
		return "check base_url (Anthropic's is https://api.anthropic.com) and the model name"
	case e.Status == http.StatusUnauthorized:
		return "check OPENAI_API_KEY (or api_key in the config file)"
	case e.Status == http.StatusForbidden:
		return "check that OPENAI_API_KEY may use model " + e.Model
	case e.Status == http.StatusNotFound:
		return "check OPENAI_BASE_URL (most servers want it to end in /v1) and OPENAI_MODEL"
	case e.Status == 0 && unreachable(e.Err):
		return "is the server running? check OPENAI_BASE_URL (or base_url in the config file)"
	case e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity:
		return compatHint(e.Message)
	}
	return ""
}

// attemptError turns what one attempt returned into an *Error that says
// whether to retry, or into a plain error for mistakes on this side that a
// retry cannot fix.
func (c *Client) attemptError(ctx context.Context, model string, rec *exchange, err error) error {
	e := &Error{BaseURL: c.baseURL, Model: model, Err: err}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.Is(context.Cause(ctx), errIdle):
		e.Retriable, e.Message, e.Err = true, fmt.Sprintf("no data from the server for %s", c.idle), errIdle
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
		e.Message = bodyText(reqErr.Body)
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

// bodyText is a short one-line form of an error body that is not
// OpenAI-shaped (an HTML 502 page, a FastAPI detail).
func bodyText(body []byte) string {
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
func (c *Client) settle(e *Error, rec *exchange) *Error {
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
