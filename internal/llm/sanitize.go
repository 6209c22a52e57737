package llm

import (
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// Placeholders Sanitize writes where the API requires text.
const (
	InterruptedResult = "no result: interrupted"
	EmptyContent      = "(empty)"
	NoContent         = "(no content)"
)

// Sanitize returns a copy of msgs that the chat completions API accepts,
// whatever truncation, compaction or an interrupt did to the history
// (seed 003: a tool message must never be sent without its tool call, nor a
// tool call without its answer):
//
//   - a tool message that does not answer a call of the nearest preceding
//     assistant message (or answers one a second time) is dropped;
//   - a call left unanswered before the next non-tool message, or at the
//     end, gets a tool message "no result: interrupted" after the existing
//     answers;
//   - a call without a name is dropped (with its answers); one without an id
//     gets one; empty arguments become "{}";
//   - empty tool, user and system content becomes "(empty)";
//   - an assistant message left with neither content nor tool calls gets
//     the content "(no content)". It is kept, not dropped, so that the
//     turns around it keep their order and meaning.
//
// The caller's slice and messages are never modified.
func Sanitize(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	var open []ToolCall // calls of the last assistant message, while its answers may follow
	answered := map[string]bool{}

	closeRun := func() {
		for _, c := range open {
			if !answered[c.ID] {
				out = append(out, Message{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID, Content: InterruptedResult})
			}
		}
		open = nil
		clear(answered)
	}

	for i, m := range msgs {
		if m.Role == openai.ChatMessageRoleTool {
			if !callsInclude(open, m.ToolCallID) || answered[m.ToolCallID] {
				continue
			}
			answered[m.ToolCallID] = true
			if !hasContent(m) {
				m.Content = EmptyContent
			}
			out = append(out, m)
			continue
		}
		closeRun()
		switch m.Role {
		case openai.ChatMessageRoleAssistant:
			m.ToolCalls = sendableCalls(i, m.ToolCalls)
			if !hasContent(m) && len(m.ToolCalls) == 0 && m.FunctionCall == nil {
				m.Content = NoContent
			}
			open = m.ToolCalls
		case openai.ChatMessageRoleUser, openai.ChatMessageRoleSystem, openai.ChatMessageRoleDeveloper:
			if !hasContent(m) {
				m.Content = EmptyContent
			}
		}
		out = append(out, m)
	}
	closeRun()
	return out
}

// sendableCalls is a copy of the calls of message i without nameless or
// repeated ones, each with an id, a type and arguments.
func sendableCalls(i int, calls []ToolCall) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ToolCall, 0, len(calls))
	seen := map[string]bool{}
	for j, c := range calls {
		if c.Function.Name == "" {
			continue
		}
		if c.ID == "" {
			// Unique within the request; no answer can name it, so it
			// will be answered as interrupted.
			c.ID = fmt.Sprintf("call_sanitized_%d_%d", i, j)
		}
		if seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		c.Index = nil
		if c.Type == "" {
			c.Type = openai.ToolTypeFunction
		}
		if c.Function.Arguments == "" {
			c.Function.Arguments = "{}"
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func hasContent(m Message) bool {
	return m.Content != "" || len(m.MultiContent) > 0
}

func callsInclude(calls []ToolCall, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}

// EstimateTokens is a chars/4 estimate of msgs: contents, reasoning, and
// tool call names and arguments. It runs about 4% low for code.
func EstimateTokens(msgs []Message) int {
	chars := 0
	for _, m := range msgs {
		chars += len(m.Content) + len(m.ReasoningContent)
		for _, p := range m.MultiContent {
			chars += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			chars += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	return (chars + 3) / 4
}
