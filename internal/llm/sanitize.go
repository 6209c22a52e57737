package llm

import "fmt"

// Placeholders Sanitize writes where the API requires text.
const (
	InterruptedResult = "no result: interrupted"
	EmptyContent      = "(empty)"
	NoContent         = "(no content)"
)

// Sanitize returns a copy of msgs that the chat completions API accepts,
// whatever truncation, compaction or an interrupt did to the history (the
// API answers 400 to a tool message sent without its tool call, and to a
// tool call sent without its answer):
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
				out = append(out, Message{Role: RoleTool, ToolCallID: c.ID, Content: InterruptedResult})
			}
		}
		open = nil
		clear(answered)
	}

	for i, m := range msgs {
		if m.Role == RoleTool {
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
		case RoleAssistant:
			m.ToolCalls = sendableCalls(i, m.ToolCalls)
			if !hasContent(m) && len(m.ToolCalls) == 0 {
				m.Content = NoContent
			}
			open = m.ToolCalls
		case RoleUser, RoleSystem, RoleDeveloper:
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
// repeated ones, each with an id and arguments.
func sendableCalls(i int, calls []ToolCall) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ToolCall, 0, len(calls))
	seen := map[string]bool{}
	for j, c := range calls {
		if c.Name == "" {
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
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func hasContent(m Message) bool {
	return m.Content != ""
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
		for _, c := range m.ToolCalls {
			chars += len(c.Name) + len(c.Arguments)
		}
	}
	return (chars + 3) / 4
}
