package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/codeagent/codeagent/internal/protocol"
)

// The gateway counts each attempt's tokens from the provider's own usage in
// the responses it forwards: the agent's report is the agent's word, the
// response is the provider's bill. The body passes through unchanged and
// unbuffered; a copy of what is needed for the count is kept on the side.

// dialect is the wire API a request speaks, told by its path: each puts
// its usage in its own shape.
type dialect int

const (
	dialectChat      dialect = iota // /chat/completions (and anything else OpenAI-shaped)
	dialectResponses                // /responses
	dialectMessages                 // Anthropic's /messages
)

func dialectOf(path string) dialect {
	switch {
	case strings.HasSuffix(path, "/messages"):
		return dialectMessages
	case strings.HasSuffix(path, "/responses"):
		return dialectResponses
	}
	return dialectChat
}

// wireUsage is the union of the three dialects' usage objects. Pointers:
// a field an event leaves out keeps what an earlier event of the same
// response said (Anthropic's message_delta carries only what changed).
type wireUsage struct {
	// Chat Completions
	PromptTokens        *int `json:"prompt_tokens"`
	CompletionTokens    *int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     *int `json:"cached_tokens"`
		CacheWriteTokens *int `json:"cache_write_tokens"` // OpenRouter
	} `json:"prompt_tokens_details"`
	Cost *float64 `json:"cost"` // OpenRouter's own figure in USD
	// Responses API and Anthropic Messages
	InputTokens        *int `json:"input_tokens"`
	OutputTokens       *int `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// event is where a usage object sits in a body or a streamed event: at the
// top (chat, a non-streamed response or message, message_delta), in
// "response" (the Responses API's response.completed), in "message"
// (message_start).
type event struct {
	Type     string     `json:"type"`
	Usage    *wireUsage `json:"usage"`
	Response *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"response"`
	Message *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
}

// tally is one response's usage as its events come: each field the last
// value the provider sent (streamed usage is cumulative, never a delta).
type tally struct {
	d                                         dialect
	prompt, completion, cached, write, input  int
	output, cacheCreate, cacheRead, responses int
	cost                                      float64
	seen                                      bool
}

func set(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

// add reads one JSON document (a body or one event's data).
func (t *tally) add(data []byte) {
	var ev event
	if json.Unmarshal(data, &ev) != nil {
		return // not JSON (a keep-alive, [DONE]): nothing billed in it
	}
	u := ev.Usage
	switch {
	case t.d == dialectResponses && ev.Response != nil && ev.Response.Usage != nil:
		u = ev.Response.Usage
	case t.d == dialectMessages && ev.Message != nil && ev.Message.Usage != nil:
		u = ev.Message.Usage
	}
	if u == nil {
		return
	}
	t.seen = true
	set(&t.prompt, u.PromptTokens)
	set(&t.completion, u.CompletionTokens)
	if d := u.PromptTokensDetails; d != nil {
		set(&t.cached, d.CachedTokens)
		set(&t.write, d.CacheWriteTokens)
	}
	if u.Cost != nil {
		t.cost = *u.Cost
	}
	set(&t.input, u.InputTokens)
	set(&t.output, u.OutputTokens)
	if d := u.InputTokensDetails; d != nil {
		set(&t.responses, d.CachedTokens)
	}
	set(&t.cacheCreate, u.CacheCreationInputTokens)
	set(&t.cacheRead, u.CacheReadInputTokens)
}

// tokens is the response's bill in the report's terms: Prompt counts every
// prompt token, Cached and CacheWrite the part read from and written to
// the provider's cache (Anthropic's input_tokens leaves both out).
func (t *tally) tokens() protocol.Tokens {
	switch t.d {
	case dialectMessages:
		return protocol.Tokens{Prompt: t.input + t.cacheCreate + t.cacheRead, Completion: t.output,
			Cached: t.cacheRead, CacheWrite: t.cacheCreate}
	case dialectResponses:
		return protocol.Tokens{Prompt: t.input, Completion: t.output, Cached: t.responses}
	}
	return protocol.Tokens{Prompt: t.prompt, Completion: t.completion, Cached: t.cached, CacheWrite: t.write, CostUSD: t.cost}
}

// maxKept bounds what is kept of a non-streamed body, or of one streamed
// event, for the count: far above any usage-bearing document (the
// Responses API's response.completed repeats the whole output).
const maxKept = 32 << 20

// counter passes a response body through as it is read and counts its
// usage: a stream event by event as the lines complete, any other body
// once whole (at its Content-Length, else at its end). What is counted is
// booked before the bytes that carry it are handed on, so the agent never
// holds an answer whose tokens the budget check does not see yet.
type counter struct {
	body   io.ReadCloser
	stream bool
	length int64 // the body's Content-Length, -1 when unknown
	t      tally
	buf    []byte // a stream's unfinished line, or the body so far
	over   bool   // buf passed maxKept: what it holds is not counted
	parsed bool   // a whole non-streamed body was counted
	booked protocol.Tokens
	once   sync.Once
	book   func(delta protocol.Tokens) // adds to the attempt's count
}

// settle books what the tally holds beyond what was booked already (a
// streamed usage is cumulative: each event replaces the last).
func (c *counter) settle() {
	if !c.t.seen {
		return
	}
	cur := c.t.tokens()
	delta := protocol.Tokens{Prompt: cur.Prompt - c.booked.Prompt, Completion: cur.Completion - c.booked.Completion,
		Cached: cur.Cached - c.booked.Cached, CacheWrite: cur.CacheWrite - c.booked.CacheWrite, CostUSD: cur.CostUSD - c.booked.CostUSD}
	if delta != (protocol.Tokens{}) {
		c.booked = cur
		c.book(delta)
	}
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if n > 0 {
		c.feed(p[:n])
	}
	if err != nil {
		c.finish()
	}
	return n, err
}

func (c *counter) Close() error {
	c.finish()
	return c.body.Close()
}

func (c *counter) feed(p []byte) {
	if !c.stream {
		c.keep(p)
		if !c.over && !c.parsed && c.length >= 0 && int64(len(c.buf)) >= c.length {
			c.parsed = true
			c.t.add(c.buf)
			c.settle()
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.keep(p)
			return
		}
		c.keep(p[:i])
		c.line()
		p = p[i+1:]
	}
}

func (c *counter) keep(p []byte) {
	if c.over {
		return
	}
	if len(c.buf)+len(p) > maxKept {
		c.over, c.buf = true, nil
		return
	}
	c.buf = append(c.buf, p...)
}

// line counts one complete line of a server-sent event stream: only data
// lines carry JSON; a multi-line data field is not used by any of the
// dialects.
func (c *counter) line() {
	l := bytes.TrimRight(c.buf, "\r")
	if data, ok := bytes.CutPrefix(l, []byte("data:")); ok && !c.over {
		c.t.add(bytes.TrimSpace(data))
		c.settle()
	}
	c.buf, c.over = c.buf[:0], false
}

func (c *counter) finish() {
	c.once.Do(func() {
		if c.stream {
			if len(c.buf) > 0 {
				c.line() // a last line without its newline
			}
		} else if !c.over && !c.parsed {
			c.t.add(c.buf)
			c.settle()
		}
		c.buf = nil
	})
}

// isStream reports whether a response is a server-sent event stream.
func isStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// askForUsage makes a streamed Chat Completions request ask for the usage
// chunk at its end (stream_options.include_usage), which the API sends
// only when asked; any other body is returned as it is. Clients that read
// the stream skip a chunk without choices, as the API documents it.
func askForUsage(path string, body []byte) []byte {
	if dialectOf(path) != dialectChat || len(body) == 0 {
		return body
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var stream bool
	if json.Unmarshal(req["stream"], &stream) != nil || !stream {
		return body
	}
	opts := map[string]json.RawMessage{}
	if raw, ok := req["stream_options"]; ok && json.Unmarshal(raw, &opts) != nil {
		return body // not an object: the provider says what is wrong with it
	}
	if string(opts["include_usage"]) == "true" {
		return body
	}
	opts["include_usage"] = json.RawMessage("true")
	raw, err := json.Marshal(opts)
	if err != nil {
		return body
	}
	req["stream_options"] = raw
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}
