package llmclient

import (
	"fmt"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
)

// refusesReasoning tells a server refusing reasoning sent back (drop it
// and send again) from one missing it or refusing something else.
func TestRefusesReasoning(t *testing.T) {
	for _, tc := range []struct {
		status int
		msg    string
		want   bool
	}{
		{400, "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' : property 'reasoning_content' is unsupported)]", true},
		{400, "Extra inputs are not permitted: messages.1.reasoning_details", true},
		{422, "unknown field `reasoning`", true},
		{400, "Missing `reasoning_content` field in the assistant message at message index 2", false},
		{400, "thinking is enabled but reasoning_content is missing in assistant tool call message at index 2", false},
		{400, "Unrecognized request argument supplied: reasoning_effort", false},
		{500, "reasoning_content is unsupported", false},
		{400, "Unexpected role 'user' after role 'tool'", false},
	} {
		err := fmt.Errorf("wrapped: %w", &llm.Error{Status: tc.status, Message: tc.msg})
		if got := refusesReasoning(err); got != tc.want {
			t.Errorf("refusesReasoning(%d %q) = %v, want %v", tc.status, tc.msg, got, tc.want)
		}
	}
}
