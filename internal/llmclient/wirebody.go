package llmclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"

	"github.com/codeagent/codeagent/internal/llm"
)

// go-openai has no fields for what some providers require back
// (reasoning_details, extra_content on tool calls), drops an empty
// reasoning_content (omitempty; Kimi refuses the turn without it) and has
// no way to add request fields. So the client lets go-openai build and
// send the request, and the HTTP layer (recordingDoer) swaps the body's
// "messages" for the ones written here from the profile, and sets the
// profile's top-level fields (token limit, stream_options, …). Everything
// else (URL, headers, tools, the response parsing) stays go-openai's.

// bodyPatch is what one request's body gets in the HTTP layer.
type bodyPatch struct {
	messages json.RawMessage
	set      map[string]any // top-level fields
}

// apply rewrites a JSON request body. Keys come out sorted, the same for
// the same request, so a growing conversation keeps a stable prefix for
// the providers' prompt caches.
func (p *bodyPatch) apply(body []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("rewrite request body: %w", err)
	}
	m["messages"] = p.messages
	for k, v := range p.set {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("rewrite request body: field %s: %w", k, err)
		}
		m[k] = raw
	}
	return json.Marshal(m)
}

// rewriteBody applies p to req's body in place.
func rewriteBody(req *http.Request, p *bodyPatch) error {
	if req.Body == nil || p == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return fmt.Errorf("rewrite request body: %w", err)
	}
	out, err := p.apply(body)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.ContentLength = int64(len(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	return nil
}

// outMessage is a message as this client sends it. Pointers tell "absent"
// from "empty": reasoning_content "" is what Kimi wants on a tool turn
// without thinking.
type outMessage struct {
	Role             string          `json:"role"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
	ToolCalls        []llm.ToolCall  `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
}

// bridgeText is the assistant message put between a tool result and a
// user message for servers that refuse user after tool (Mistral).
const bridgeText = "Noted."

// wireProfile is a Profile with what writes a request body by it: the
// profile itself is llmconf's, which knows no wire.
type wireProfile llm.Profile

// outMessages writes msgs the way p's provider accepts them.
func (p wireProfile) outMessages(msgs []llm.Message) []outMessage {
	out := make([]outMessage, 0, len(msgs))
	for i, m := range msgs {
		role := m.Role
		if role == llm.RoleDeveloper && !p.DeveloperRole {
			role = llm.RoleSystem
		}
		if p.BridgeToolUser && role == llm.RoleUser && i > 0 && msgs[i-1].Role == llm.RoleTool {
			text := bridgeText
			out = append(out, outMessage{Role: llm.RoleAssistant, Content: &text})
		}
		o := outMessage{Role: role, ToolCallID: p.callID(m.ToolCallID)}
		if m.Content != "" {
			content := m.Content
			o.Content = &content
		}
		if role == llm.RoleAssistant {
			p.assistant(&o, m)
		}
		out = append(out, o)
	}
	return out
}

// assistant adds tool calls and reasoning to an assistant message.
func (p wireProfile) assistant(o *outMessage, m llm.Message) {
	for _, c := range m.ToolCalls {
		// ToolCall's JSON is the API's shape; the signature goes out
		// only when the profile says.
		w := llm.ToolCall{ID: p.callID(c.ID), Name: c.Name, Arguments: c.Arguments}
		if p.ThoughtSignatures {
			w.ThoughtSignature = c.ThoughtSignature
		}
		o.ToolCalls = append(o.ToolCalls, w)
	}
	reasoning := m.ReasoningContent
	switch p.Reasoning {
	case llm.ReasoningContent:
		if reasoning != "" || (p.ReasoningOnToolCalls && len(m.ToolCalls) > 0) {
			o.ReasoningContent = &reasoning
		}
	case llm.ReasoningOpenRouter:
		if reasoning != "" {
			o.Reasoning = &reasoning
		}
		o.ReasoningDetails = m.ReasoningDetails
	case llm.ReasoningEcho:
		echo(o, m)
	}
}

// fieldReasoning is the `reasoning` field (OpenRouter, Groq, newer vLLM).
const fieldReasoning = "reasoning"

// echo sends an unknown server's reasoning back in the field it came in,
// and its reasoning_details when they carry a signature or encrypted data
// (state the provider checks; plain text details repeat the text).
func echo(o *outMessage, m llm.Message) {
	if r := m.ReasoningContent; r != "" {
		switch m.ReasoningField {
		case llm.ReasoningContent:
			o.ReasoningContent = &r
		case fieldReasoning:
			o.Reasoning = &r
		}
	}
	if signed(m.ReasoningDetails) {
		o.ReasoningDetails = m.ReasoningDetails
	}
}

// signed reports whether reasoning_details hold an item with a signature
// or encrypted data.
func signed(details json.RawMessage) bool {
	if len(details) == 0 {
		return false
	}
	var items []map[string]any
	if json.Unmarshal(details, &items) != nil {
		return false
	}
	for _, it := range items {
		for _, k := range []string{"signature", "data", "encrypted_content"} {
			if v, ok := it[k].(string); ok && v != "" {
				return true
			}
		}
	}
	return false
}

// echoes reports whether msgs, sent by p, carry reasoning echoed back.
func (p wireProfile) echoes(msgs []llm.Message) bool {
	if p.Reasoning != llm.ReasoningEcho {
		return false
	}
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant && ((m.ReasoningContent != "" && m.ReasoningField != "") || signed(m.ReasoningDetails)) {
			return true
		}
	}
	return false
}

var alnum9 = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// callID maps an id to the profile's format. The mapping is a hash, so an
// id maps the same in the assistant message and in the tool message that
// answers it, in every request and after a resume, and ids the provider
// made itself pass unchanged.
func (p wireProfile) callID(id string) string {
	if id == "" || p.ToolCallIDs != llm.IDsAlnum9 || alnum9.MatchString(id) {
		return id
	}
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	sum := sha256.Sum256([]byte(id))
	out := make([]byte, 9)
	for i := range out {
		out[i] = digits[int(sum[i])%len(digits)]
	}
	return string(out)
}

// patch is the body rewrite of one request.
func (p wireProfile) patch(sent []llm.Message, req llm.Request, maxTokens int) (*bodyPatch, error) {
	msgs, err := json.Marshal(p.outMessages(sent))
	if err != nil {
		return nil, fmt.Errorf("encode messages: %w", err)
	}
	set := map[string]any{}
	if maxTokens > 0 {
		set[p.TokenField] = maxTokens
	}
	if req.Temperature != nil && p.Temperature {
		set["temperature"] = *req.Temperature
	}
	if p.ParallelToolCalls && len(req.Tools) > 0 {
		set["parallel_tool_calls"] = true
	}
	if p.ReasoningEffort != "" {
		set["reasoning_effort"] = p.ReasoningEffort
	}
	if req.Stream && p.StreamOptions {
		set["stream_options"] = map[string]bool{"include_usage": true}
	}
	return &bodyPatch{messages: msgs, set: set}, nil
}
