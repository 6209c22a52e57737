// Package anthropictest is a fake Anthropic Messages API (/v1/messages) for
// tests: strict where the real API is strict (it answers 400 with
// Anthropic's error shape for a tool_result without its tool_use, a
// tool_use left unanswered, a missing or forged thinking block before a
// tool_use when thinking is on, more than four cache_control blocks, empty
// text blocks, a non-object input schema), scripted in what it answers, and
// billing like Anthropic: it keeps a prompt cache keyed by prefixes ending
// at cache_control breakpoints and reports cache_creation_input_tokens and
// cache_read_input_tokens apart from input_tokens.
//
// The rules are taken from Anthropic's documentation (Messages API, tool
// use, extended thinking, prompt caching); token counts are a chars/4
// estimate of each block's JSON.
package anthropictest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Reply is one scripted answer.
type Reply struct {
	Text     string
	Thinking string // sent (with a signature) when the request turned thinking on
	Calls    []Call
	// Status, when not 0, answers with this HTTP status and an error of
	// ErrType (e.g. "overloaded_error" with 529), with RetryAfter as the
	// retry-after header when set.
	Status     int
	ErrType    string
	RetryAfter string
	// StreamError, with a streaming request, sends an error event of this
	// type after the first content block instead of finishing.
	StreamError string
	// Stall, with a streaming request, goes silent after the first
	// content block until the client gives up (idle timeouts).
	Stall  bool
	Output int // output tokens reported; 0: estimated from the content
}

// Call is one tool_use block of a reply.
type Call struct {
	ID    string // "" : toolu_<n>
	Name  string
	Input string // JSON object
}

// Server is the fake. Use New; it closes with the test.
type Server struct {
	*httptest.Server
	// MinCacheTokens is the shortest prefix the cache keeps (Anthropic:
	// 1024 tokens for most models, 2048/4096 for some); set before use.
	MinCacheTokens int

	mu       sync.Mutex
	script   []Reply
	next     int
	bodies   [][]byte
	cache    map[string]bool   // prefix hashes at breakpoints
	issued   map[string]string // signature -> thinking text it signs
	usages   []Usage
	problems []string
}

// Usage is what the fake billed for one request.
type Usage struct {
	Input      int `json:"input_tokens"`
	CacheWrite int `json:"cache_creation_input_tokens"`
	CacheRead  int `json:"cache_read_input_tokens"`
	Output     int `json:"output_tokens"`
}

// New starts a fake that answers replies in order (the last one again when
// the script runs out).
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{MinCacheTokens: 1024, script: replies, cache: map[string]bool{}, issued: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Bodies returns the raw request bodies received, in order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Usages returns what each successful request was billed.
func (s *Server) Usages() []Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Usage(nil), s.usages...)
}

// Rejections returns the 400 messages the fake answered, for test failures.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// request is the part of the wire request the fake reads.
type request struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	System    json.RawMessage   `json:"system"`
	Messages  []message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	Stream    bool              `json:"stream"`
	Thinking  *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	CacheControl json.RawMessage `json:"cache_control"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		writeError(w, http.StatusNotFound, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path, "")
		return
	}
	// The official Go SDK (v2.15) sends the key as a bearer token; the
	// API's documented header is x-api-key. Either will do.
	if r.Header.Get("X-Api-Key") == "" && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		writeError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required", "")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version header is required", "")
		return
	}
	var body []byte
	var req request
	raw := json.NewDecoder(r.Body)
	var msg json.RawMessage
	if err := raw.Decode(&msg); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error(), "")
		return
	}
	body = msg
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	reply := Reply{Text: "done"}
	if len(s.script) > 0 {
		reply = s.script[min(s.next, len(s.script)-1)]
	}
	s.next++
	n := s.next
	s.mu.Unlock()

	if err := json.Unmarshal(body, &req); err != nil {
		s.reject(w, "invalid request: "+err.Error())
		return
	}
	if problem := s.validate(req); problem != "" {
		s.reject(w, problem)
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, reply.ErrType, "scripted "+reply.ErrType, reply.RetryAfter)
		return
	}
	usage := s.bill(req)
	out := s.content(req, reply, n)
	usage.Output = reply.Output
	if usage.Output == 0 {
		raw, _ := json.Marshal(out)
		usage.Output = max(1, len(raw)/4)
	}
	s.mu.Lock()
	s.usages = append(s.usages, usage)
	s.mu.Unlock()
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	id := fmt.Sprintf("msg_fake%04d", n)
	if req.Stream {
		s.stream(w, r.Context().Done(), id, req.Model, out, stop, usage, reply)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": out, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
	})
}

func (s *Server) reject(w http.ResponseWriter, problem string) {
	s.mu.Lock()
	s.problems = append(s.problems, problem)
	s.mu.Unlock()
	writeError(w, http.StatusBadRequest, "invalid_request_error", problem, "")
}

func writeError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "error", "error": map[string]string{"type": typ, "message": msg},
	})
}

// content builds the reply's blocks: thinking (when on) first, signed so
// that the fake can tell a replayed block from a made-up one.
func (s *Server) content(req request, reply Reply, n int) []map[string]any {
	var out []map[string]any
	if req.Thinking != nil && req.Thinking.Type == "enabled" && reply.Thinking != "" {
		sig := fmt.Sprintf("sig_%d_%s", n, hash([]byte(reply.Thinking))[:16])
		s.mu.Lock()
		s.issued[sig] = reply.Thinking
		s.mu.Unlock()
		out = append(out, map[string]any{"type": "thinking", "thinking": reply.Thinking, "signature": sig})
	}
	if reply.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": reply.Text})
	}
	for i, c := range reply.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%02d%02d", n, i)
		}
		input := c.Input
		if input == "" {
			input = "{}"
		}
		out = append(out, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": json.RawMessage(input)})
	}
	return out
}

var (
	toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
	toolIDRE   = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// validate returns what the real API would answer 400 for, "" if nothing.
func (s *Server) validate(req request) string {
	if req.Model == "" {
		return "model: Field required"
	}
	if req.MaxTokens <= 0 {
		return "max_tokens: Field required"
	}
	if len(req.Messages) == 0 {
		return "messages: at least one message is required"
	}
	thinking := req.Thinking != nil && req.Thinking.Type == "enabled"
	if thinking {
		if req.Thinking.BudgetTokens < 1024 {
			return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
		}
		if req.MaxTokens <= req.Thinking.BudgetTokens {
			return "`max_tokens` must be greater than `thinking.budget_tokens`"
		}
	}
	breakpoints := 0
	system, err := systemBlocks(req.System)
	if err != nil {
		return "system: " + err.Error()
	}
	for _, b := range system {
		if b.Type != "text" || b.Text == nil || *b.Text == "" {
			return "system: text content blocks must be non-empty"
		}
		if len(b.CacheControl) > 0 {
			breakpoints++
		}
	}
	for i, raw := range req.Tools {
		var t struct {
			Name         string          `json:"name"`
			InputSchema  map[string]any  `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Sprintf("tools.%d: %v", i, err)
		}
		if !toolNameRE.MatchString(t.Name) {
			return fmt.Sprintf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
		}
		if t.InputSchema["type"] != "object" {
			return fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
		if len(t.CacheControl) > 0 {
			breakpoints++
		}
	}
	if req.Messages[0].Role != "user" {
		return "messages: first message must use the \"user\" role"
	}
	var pending []string // tool_use ids of the previous assistant message
	for i, m := range req.Messages {
		blocks, err := contentBlocks(m.Content)
		if err != nil {
			return fmt.Sprintf("messages.%d.content: %v", i, err)
		}
		if len(blocks) == 0 {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content", i)
		}
		for j, b := range blocks {
			if len(b.CacheControl) > 0 {
				breakpoints++
			}
			if b.Type == "text" && (b.Text == nil || *b.Text == "") {
				return fmt.Sprintf("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
			}
		}
		switch m.Role {
		case "assistant":
			if len(pending) > 0 {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(pending, ", "))
			}
			var calls []string
			for j, b := range blocks {
				switch b.Type {
				case "tool_use":
					if !toolIDRE.MatchString(b.ID) {
						return fmt.Sprintf("messages.%d.content.%d.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'", i, j)
					}
					if len(b.Input) == 0 || b.Input[0] != '{' {
						return fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
					}
					calls = append(calls, b.ID)
				case "thinking":
					if want, ok := s.signed(b.Signature); !ok || want != b.Thinking {
						return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
					}
				case "tool_result":
					return fmt.Sprintf("messages.%d.content.%d: tool_result blocks are only allowed in user messages", i, j)
				}
			}
			if thinking && len(calls) > 0 && isLastToolTurn(req.Messages, i) {
				if first := blocks[0].Type; first != "thinking" && first != "redacted_thinking" {
					return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). To avoid this requirement, disable `thinking`.", i, first)
				}
			}
			pending = calls
		case "user":
			answered := map[string]bool{}
			seenOther := false
			for j, b := range blocks {
				if b.Type != "tool_result" {
					seenOther = true
					continue
				}
				if seenOther {
					return fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come before any other content in a user message", i, j)
				}
				if !contains(pending, b.ToolUseID) {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
				if answered[b.ToolUseID] {
					return fmt.Sprintf("messages.%d.content.%d: duplicate tool_result for %s", i, j, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
			}
			var missing []string
			for _, id := range pending {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
			}
			pending = nil
		default:
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
	}
	if len(pending) > 0 {
		return fmt.Sprintf("messages: `tool_use` ids were found without `tool_result` blocks immediately after: %s", strings.Join(pending, ", "))
	}
	if breakpoints > 4 {
		return fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", breakpoints)
	}
	return ""
}

// isLastToolTurn reports whether the assistant message at i made the calls
// the conversation's tail answers (only tool results follow it).
func isLastToolTurn(msgs []message, i int) bool {
	for _, m := range msgs[i+1:] {
		if m.Role == "assistant" {
			return false
		}
		blocks, _ := contentBlocks(m.Content)
		for _, b := range blocks {
			if b.Type != "tool_result" {
				return false
			}
		}
	}
	return true
}

func (s *Server) signed(sig string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.issued[sig]
	return t, ok
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// systemBlocks reads system as a string or a list of text blocks.
func systemBlocks(raw json.RawMessage) ([]block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []block{{Type: "text", Text: &text}}, nil
	}
	var blocks []block
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

// contentBlocks reads content as a string or a list of blocks.
func contentBlocks(raw json.RawMessage) ([]block, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []block{{Type: "text", Text: &text}}, nil
	}
	var blocks []block
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

// bill prices the request's prompt like Anthropic's cache: the prompt is
// the sequence tools, system, messages' blocks; a breakpoint's prefix is
// read from the cache when an identical prefix was written before (looking
// back up to 20 blocks from each breakpoint), and the prefix up to the last
// breakpoint is written; what follows the last breakpoint is plain input.
func (s *Server) bill(req request) Usage {
	type unit struct {
		tokens int
		key    string // hash of the prefix ending here
		mark   bool
	}
	var units []unit
	h := ""
	add := func(raw []byte, mark bool) {
		canon := canonical(raw)
		h = hash([]byte(h + "|" + string(canon)))
		units = append(units, unit{tokens: (len(canon) + 3) / 4, key: h, mark: mark})
	}
	for _, t := range req.Tools {
		add(t, hasCacheControl(t))
	}
	system, _ := systemBlocks(req.System)
	for _, b := range system {
		raw, _ := json.Marshal(b)
		add(raw, len(b.CacheControl) > 0)
	}
	for _, m := range req.Messages {
		var blocks []json.RawMessage
		if json.Unmarshal(m.Content, &blocks) != nil {
			blocks = []json.RawMessage{m.Content}
		}
		for _, b := range blocks {
			add(append([]byte(m.Role+":"), b...), hasCacheControl(b))
		}
	}
	cum := make([]int, len(units)+1)
	for i, u := range units {
		cum[i+1] = cum[i] + u.tokens
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hit, last := 0, 0 // prefix lengths in units
	for i, u := range units {
		if !u.mark {
			continue
		}
		last = i + 1
		for j := i; j >= 0 && j >= i-20; j-- {
			if s.cache[units[j].key] && j+1 > hit {
				hit = j + 1
				break
			}
		}
	}
	for i, u := range units[:last] {
		if u.mark && cum[i+1] >= s.MinCacheTokens {
			s.cache[u.key] = true
		}
	}
	usage := Usage{Input: cum[len(units)] - cum[max(hit, last)], CacheRead: cum[hit]}
	if last > hit && cum[last] >= s.MinCacheTokens {
		usage.CacheWrite = cum[last] - cum[hit]
	} else if last > hit {
		usage.Input += cum[last] - cum[hit]
	}
	return usage
}

func hasCacheControl(raw []byte) bool {
	var v struct {
		CacheControl json.RawMessage `json:"cache_control"`
	}
	return json.Unmarshal(raw, &v) == nil && len(v.CacheControl) > 0
}

// canonical is a block's JSON without cache_control, keys sorted, so that
// moving a breakpoint does not change the prefix it belongs to.
func canonical(raw []byte) []byte {
	prefix := ""
	if i := strings.IndexByte(string(raw), ':'); i > 0 && !strings.HasPrefix(string(raw), "{") {
		prefix, raw = string(raw[:i+1]), raw[i+1:]
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return append([]byte(prefix), raw...)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "cache_control")
	}
	out, _ := json.Marshal(v)
	return append([]byte(prefix), out...)
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
