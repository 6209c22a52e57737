package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
)

// TestTextToolCall: the forms servers without a tool parser leave in the
// content (Hermes/Qwen <tool_call>, a bare JSON call, Llama's "parameters",
// Mistral's [TOOL_CALLS] list, a fenced block) are errors naming the fix;
// text that merely contains JSON, or names a tool not offered, is an answer.
func TestTextToolCall(t *testing.T) {
	tools := []llm.Tool{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}
	tests := []struct {
		name    string
		content string
		want    bool
	}{
		{"hermes block", "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>", true},
		{"unclosed block", "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}", true},
		{"bare json", `{"name": "read_file", "arguments": {"path": "a.go"}}`, true},
		{"llama parameters", `<|python_tag|>{"name": "read_file", "parameters": {"path": "a.go"}}`, true},
		{"mistral list", `[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.go"}}]`, true},
		{"fenced", "```json\n{\"name\": \"read_file\", \"arguments\": {}}\n```", true},
		{"openai shape", `{"type": "function", "function": {"name": "read_file", "arguments": "{}"}}`, true},
		{"plain answer", "Foo returns 42.", false},
		{"json answer", `{"name": "Ada", "age": 36}`, false},
		{"tool not offered", `{"name": "rm_rf", "arguments": {}}`, false},
		{"answer that quotes json among text", "The call was {\"name\": \"read_file\", \"arguments\": {}} earlier.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := llm.TextToolCall(tt.content, tools)
			if (err != nil) != tt.want {
				t.Fatalf("TextToolCall = %v, want error %v", err, tt.want)
			}
			if err == nil {
				return
			}
			for _, fix := range []string{"--enable-auto-tool-choice --tool-call-parser", "--jinja", "read_file"} {
				if !strings.Contains(err.Error(), fix) {
					t.Errorf("error %q does not name %q", err, fix)
				}
			}
			if !llm.IsSetup(err) {
				t.Error("a tool call as text is not a setup error")
			}
		})
	}
	if err := llm.TextToolCall(`{"name": "read_file", "arguments": {}}`, nil); err != nil {
		t.Errorf("without offered tools nothing is a call: %v", err)
	}
}
