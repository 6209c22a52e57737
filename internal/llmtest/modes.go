package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Mode makes the server answer and check like one provider's Chat
// Completions endpoint, with that provider's 400s (PITFALLS.md, "Provider
// dialects"), so that each profile rule of internal/llmclient is a test that
// fails without it. The zero Mode is OpenAI.
type Mode string

const (
	// ModeKimi streams reasoning_content and answers 400 when an assistant
	// message with tool calls comes back without reasoning_content (Kimi,
	// DeepSeek thinking mode): present, even empty, is what it wants.
	ModeKimi Mode = "kimi"
	// ModeDeepSeek is ModeKimi with DeepSeek's wording of the 400
	// (thinking mode, V3.2 and later).
	ModeDeepSeek Mode = "deepseek"
	// ModeGroq streams its reasoning as `reasoning` (reasoning_format
	// parsed) and answers 400 when an assistant message carries
	// reasoning_content.
	ModeGroq Mode = "groq"
	// ModeMistral makes nine-character ids and answers 400 on an id of
	// another shape and on a user message right after a tool message.
	ModeMistral Mode = "mistral"
	// ModeGemini puts extra_content.google.thought_signature on tool calls
	// and answers 400 when a call comes back without its signature.
	ModeGemini Mode = "gemini"
	// ModeOpenRouter streams reasoning and reasoning_details (with a
	// signature) and answers 400 unless reasoning_details come back on the
	// assistant message unchanged.
	ModeOpenRouter Mode = "openrouter"
	// ModeNoReasoningBack streams reasoning_content, as a reasoning model
	// behind a strict server does (a vLLM or SGLang deployment, Groq's
	// validation), and answers 400 naming the field when an assistant
	// message carries reasoning_content, reasoning or reasoning_details.
	ModeNoReasoningBack Mode = "no-reasoning-back"
)

// WithMode makes the server behave like a provider (see Mode).
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

var alnum9 = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// modeID is the id the server gives call i of request n.
func (s *Server) modeID(n, i int) string {
	if s.opts.mode == ModeMistral {
		return fmt.Sprintf("M%03dx%04d", n%1000, i%10000)
	}
	return fmt.Sprintf("call_r%d_%d", n, i)
}

// served is what the server sent that must come back unchanged, by the id
// of the first tool call of the answer.
type served struct {
	details    json.RawMessage
	signatures map[string]string // call id → thought signature
}

// modeReasoning is the reasoning a reply streams in a mode that has any.
func modeReasoning(reply Reply) string {
	if reply.Reasoning != "" {
		return reply.Reasoning
	}
	return "Let me think about which tool to call."
}

// remember keeps what the answer to a request carries that must come back.
func (s *Server) remember(reply Reply) {
	if len(reply.ToolCalls) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served == nil {
		s.served = map[string]*served{}
	}
	sv := &served{signatures: map[string]string{}}
	switch s.opts.mode {
	case ModeOpenRouter:
		sv.details = detailsOf(reply)
	case ModeGemini:
		for _, c := range reply.ToolCalls {
			sv.signatures[c.ID] = signatureOf(c.ID)
		}
	}
	s.served[reply.ToolCalls[0].ID] = sv
}

func signatureOf(id string) string { return "c2lnLW9mLQ==" + id }

// detailsOf is the reasoning_details OpenRouter sends with an answer, as a
// client must send them back (the stream's pieces joined).
func detailsOf(reply Reply) json.RawMessage {
	raw, _ := json.Marshal([]map[string]any{{
		"type": "reasoning.text", "text": modeReasoning(reply), "format": "anthropic-claude-v1",
		"index": 0, "signature": "RXF0ZXN0LXNpZ25hdHVyZQ==",
	}})
	return raw
}

// validateMode applies the mode's own 400s.
func (s *Server) validateMode(req Request) error {
	for i, m := range req.Messages {
		switch s.opts.mode {
		case ModeKimi:
			if m.Role == roleAssistant && len(m.ToolCalls) > 0 && m.ReasoningContent == nil {
				return &ValidationError{Message: fmt.Sprintf("thinking is enabled but reasoning_content is missing in assistant tool call message at index %d", i)}
			}
		case ModeDeepSeek:
			if m.Role == roleAssistant && len(m.ToolCalls) > 0 && m.ReasoningContent == nil {
				return &ValidationError{Message: fmt.Sprintf("Missing `reasoning_content` field in the assistant message at message index %d. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls", i)}
			}
		case ModeGroq:
			if m.Role == roleAssistant && m.ReasoningContent != nil {
				return &ValidationError{Message: fmt.Sprintf("'messages.%d' : for 'role:assistant' the following must be satisfied[('messages.%d' : property 'reasoning_content' is unsupported)]", i, i)}
			}
		case ModeNoReasoningBack:
			if field := reasoningField(m); m.Role == roleAssistant && field != "" {
				return &ValidationError{Message: fmt.Sprintf("'messages.%d' : for 'role:assistant' the following must be satisfied[('messages.%d' : property '%s' is unsupported)]", i, i, field)}
			}
		case ModeMistral:
			if err := mistralRules(req.Messages, i); err != nil {
				return err
			}
		case ModeGemini, ModeOpenRouter:
			if err := s.returned(i, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// reasoningField names a reasoning field m carries, "" when none.
func reasoningField(m Message) string {
	switch {
	case m.ReasoningContent != nil:
		return "reasoning_content"
	case m.Reasoning != nil:
		return "reasoning"
	case len(m.ReasoningDetails) > 0:
		return "reasoning_details"
	}
	return ""
}

func mistralRules(msgs []Message, i int) error {
	m := msgs[i]
	for _, c := range m.ToolCalls {
		if !alnum9.MatchString(c.ID) {
			return &ValidationError{Message: fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", c.ID)}
		}
	}
	if m.Role == roleTool && !alnum9.MatchString(m.ToolCallID) {
		return &ValidationError{Message: fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", m.ToolCallID)}
	}
	if m.Role == roleUser && i > 0 && msgs[i-1].Role == roleTool {
		return &ValidationError{Message: "Unexpected role 'user' after role 'tool'"}
	}
	return nil
}

// returned checks that an assistant message the server made carries back
// what the server sent with it.
func (s *Server) returned(i int, m Message) error {
	if m.Role != roleAssistant || len(m.ToolCalls) == 0 {
		return nil
	}
	s.mu.Lock()
	sv := s.served[m.ToolCalls[0].ID]
	s.mu.Unlock()
	if sv == nil {
		return nil // not an answer of this server
	}
	if s.opts.mode == ModeOpenRouter && !jsonEqual(m.ReasoningDetails, sv.details) {
		return &ValidationError{Message: fmt.Sprintf("messages.%d: reasoning_details must be passed back unchanged (got %s)", i, string(m.ReasoningDetails))}
	}
	for j, c := range m.ToolCalls {
		want, ok := sv.signatures[c.ID]
		if !ok {
			continue
		}
		var got struct {
			Google struct {
				ThoughtSignature string `json:"thought_signature"`
			} `json:"google"`
		}
		_ = json.Unmarshal(c.ExtraContent, &got)
		if got.Google.ThoughtSignature != want {
			return &ValidationError{Message: fmt.Sprintf("Function call `%s` in the %d. content block is missing a `thought_signature`.", c.Function.Name, j+1),
				Code: "INVALID_ARGUMENT"}
		}
	}
	return nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// modeDeltas are the mode's reasoning pieces at the start of a stream.
func (s *Server) modeDeltas(reply Reply) []chunkDelta {
	text := modeReasoning(reply)
	switch s.opts.mode {
	case ModeKimi, ModeDeepSeek, ModeNoReasoningBack:
		var out []chunkDelta
		for _, p := range split(text, s.opts.chunkSize) {
			out = append(out, chunkDelta{ReasoningContent: &p})
		}
		return out
	case ModeGroq:
		var out []chunkDelta
		for _, p := range split(text, s.opts.chunkSize) {
			out = append(out, chunkDelta{Reasoning: &p})
		}
		return out
	case ModeOpenRouter:
		var out []chunkDelta
		for _, p := range split(text, s.opts.chunkSize) {
			out = append(out, chunkDelta{Reasoning: &p, ReasoningDetails: []map[string]any{
				{"type": "reasoning.text", "text": p, "format": "anthropic-claude-v1", "index": 0}}})
		}
		return append(out, chunkDelta{ReasoningDetails: []map[string]any{
			{"type": "reasoning.text", "signature": "RXF0ZXN0LXNpZ25hdHVyZQ==", "format": "anthropic-claude-v1", "index": 0}}})
	}
	return nil
}

// modeMessage adds the mode's reasoning to a non-streamed answer.
func (s *Server) modeMessage(msg *Message, reply Reply) {
	text := modeReasoning(reply)
	switch s.opts.mode {
	case ModeKimi, ModeDeepSeek, ModeNoReasoningBack:
		msg.ReasoningContent = &text
	case ModeGroq:
		msg.Reasoning = &text
	case ModeOpenRouter:
		msg.Reasoning = &text
		msg.ReasoningDetails = detailsOf(reply)
	case ModeGemini:
		for i := range msg.ToolCalls {
			msg.ToolCalls[i].ExtraContent = extraFor(msg.ToolCalls[i].ID)
		}
	}
}

func extraFor(id string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"google": map[string]string{"thought_signature": signatureOf(id)}})
	return raw
}
