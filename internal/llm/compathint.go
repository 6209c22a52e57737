package llm

import "strings"

// compatHint names the compat key that fixes a 400 a provider answers for
// one of the profile rules: a server behind a proxy or an unknown host gets
// the default profile, and the message is how the person finds out which
// field to override.
func compatHint(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "reasoning_content") && (strings.Contains(m, "missing") || strings.Contains(m, "required")):
		return "this server wants the reasoning back: set compat: {reasoning: reasoning_content, reasoning_on_tool_calls: true} in the config"
	case strings.Contains(m, "reasoning_content") || strings.Contains(m, "reasoning_details"):
		return "this server rejects reasoning sent back: set compat: {reasoning: none} in the config"
	case strings.Contains(m, "thought_signature"):
		return "this server is Gemini's: set compat: {profile: gemini} (or thought_signatures: true) in the config"
	case (strings.Contains(m, "tool call id") || strings.Contains(m, "tool_call_id")) && strings.Contains(m, "length of 9"):
		return "this server wants nine-character tool call ids: set compat: {tool_call_ids: alnum9} in the config"
	case strings.Contains(m, "after role 'tool'"):
		return "this server refuses a user message right after a tool result: set compat: {bridge_tool_user: true} in the config"
	case strings.Contains(m, "developer"):
		return "this server may not know the developer role: set compat: {developer_role: false} in the config"
	case strings.Contains(m, "stream_options"):
		return "set compat: {stream_options: false} in the config"
	case strings.Contains(m, "max_tokens") && strings.Contains(m, "max_completion_tokens"):
		return "set compat: {token_field: max_completion_tokens} (or max_tokens) in the config"
	case strings.Contains(m, "parallel_tool_calls"):
		return "set compat: {parallel_tool_calls: false} in the config"
	case strings.Contains(m, "temperature"):
		return "set compat: {temperature: false} in the config"
	case strings.Contains(m, "reasoning_effort"):
		return "set compat: {reasoning_effort: \"\"} or a value the model takes in the config"
	}
	return ""
}
