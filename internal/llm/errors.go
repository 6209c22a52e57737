package llm

import (
	"errors"
	"net"
	"net/http"
	"strings"
)

var (
	// ErrNoAPIKey is returned by Chat when Config.APIKey is empty.
	ErrNoAPIKey = errors.New("no API key: set OPENAI_API_KEY in the environment or the config file (local servers such as Ollama accept any non-empty value)")
	// ErrNoModel is returned by Chat when neither the request nor Config names a model.
	ErrNoModel = errors.New("no model: set OPENAI_MODEL in the environment or the config file")
	// ErrNoMessages is returned by Chat when nothing is left to send after Sanitize.
	ErrNoMessages = errors.New("no messages to send: the conversation is empty after sanitising")
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
		return Unreachable(e.Err)
	}
	return false
}

// Unreachable reports whether err is a failure to connect at all (refused,
// no route, unknown host), as opposed to a connection that broke.
func Unreachable(err error) bool {
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
	case e.Status == 0 && Unreachable(e.Err):
		return "is the server running? check OPENAI_BASE_URL (or base_url in the config file)"
	case e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity:
		return compatHint(e.Message)
	}
	return ""
}
