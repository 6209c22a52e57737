package chat

import (
	"context"
	"io"
	"testing"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
)

// MCP tools their server does not mark read-only need approval like
// shell_exec; read-only ones run without asking.
func TestApprovalOfMCPTools(t *testing.T) {
	tests := []struct {
		mode     ApprovalMode
		tool     string
		readOnly bool
		allowed  bool
	}{
		{ApproveDefault, "mcp__docs__search", true, true},
		{ApproveDefault, "mcp__docs__write_note", false, false},
		{ApproveAutoEdit, "mcp__docs__write_note", false, false},
		{ApproveAutoEdit, "edit_file", false, true},
		{ApproveYolo, "mcp__docs__write_note", false, true},
		{ApproveDefault, "read_file", true, true},
	}
	for _, tt := range tests {
		asked := false
		ap := &approver{mode: tt.mode, always: map[string]bool{}, out: io.Discard, canAsk: true,
			ask: func(context.Context) (string, bool) { asked = true; return "n", true }}
		got := ap.approve(t.Context(), agent.ToolRequest{Tool: tt.tool, Args: "{}", ReadOnly: tt.readOnly})
		if got.Allow != tt.allowed || asked == tt.allowed {
			t.Errorf("%s %s (read-only %v): allow %v asked %v, want allow %v", tt.mode, tt.tool, tt.readOnly, got.Allow, asked, tt.allowed)
		}
	}
}
