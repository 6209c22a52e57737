package chat

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/internal/events"
)

// ApprovalMode says which tool calls run without asking.
type ApprovalMode string

const (
	// ApproveDefault asks before write_file, edit_file, shell_exec and MCP
	// tools not marked read-only.
	ApproveDefault ApprovalMode = "default"
	// ApproveAutoEdit runs edits without asking and asks before shell_exec
	// and MCP tools not marked read-only.
	ApproveAutoEdit ApprovalMode = "auto_edit"
	// ApproveYolo runs everything without asking.
	ApproveYolo ApprovalMode = "yolo"
)

// ParseApprovalMode checks a --approval or --mode value ("" is default).
func ParseApprovalMode(s string) (ApprovalMode, error) {
	switch m := ApprovalMode(strings.TrimSpace(s)); m {
	case "":
		return ApproveDefault, nil
	case ApproveDefault, ApproveAutoEdit, ApproveYolo:
		return m, nil
	}
	return "", fmt.Errorf("approval mode %q is not one of default, auto_edit, yolo", s)
}

// toolKind is what approval a tool needs: "edit", "shell" or none. An MCP
// tool can do anything its server can, so one its server does not mark
// read-only is treated like shell_exec.
func toolKind(tool string, readOnly bool) string {
	switch {
	case tool == "write_file" || tool == "edit_file":
		return "edit"
	case tool == "shell_exec":
		return "shell"
	case strings.HasPrefix(tool, "mcp__") && !readOnly:
		return "shell"
	}
	return ""
}

// approver answers the agent's approval requests for one chat session.
type approver struct {
	mode     ApprovalMode
	override ApprovalMode // a todo run with --mode; "" = none
	canAsk   bool         // there is someone to ask (a terminal, or an explicit --approval default)
	always   map[string]bool
	ask      func(ctx context.Context) (string, bool) // the next input line
	out      io.Writer
}

func (ap *approver) effective() ApprovalMode {
	if ap.override != "" {
		return ap.override
	}
	return ap.mode
}

func (ap *approver) approve(ctx context.Context, r agent.ToolRequest) agent.Approval {
	kind := toolKind(r.Tool, r.ReadOnly)
	mode := ap.effective()
	if kind == "" || mode == ApproveYolo || (mode == ApproveAutoEdit && kind == "edit") || ap.always[r.Tool] {
		return agent.Approval{Allow: true}
	}
	if !ap.canAsk {
		flag := "--approval yolo"
		if kind == "edit" {
			flag = "--approval auto_edit (edits) or --approval yolo (edits and shell)"
		}
		msg := fmt.Sprintf("%s needs approval and stdin is not a terminal to ask on; the person can allow it by starting the chat with %s", r.Tool, flag)
		fmt.Fprintf(ap.out, "✗ refused: %s\n", msg)
		return agent.Approval{Reason: msg}
	}
	for {
		fmt.Fprintf(ap.out, "\nAllow %s %s? [y]es / [n]o / [a]lways for this session: ", r.Tool, events.Shorten(r.Args, 300))
		line, ok := ap.ask(ctx)
		if !ok {
			fmt.Fprintln(ap.out)
			return agent.Approval{Reason: "the person did not answer the approval question (interrupted or end of input)"}
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return agent.Approval{Allow: true}
		case "a", "always":
			ap.always[r.Tool] = true
			return agent.Approval{Allow: true}
		case "n", "no":
			return agent.Approval{Reason: "the person declined this call; ask them what to do instead"}
		}
		fmt.Fprintln(ap.out, "please answer y, n or a")
	}
}
