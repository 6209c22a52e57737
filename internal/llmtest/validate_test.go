package llmtest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

func user(s string) llmtest.Message {
	return llmtest.Message{Role: "user", Content: s}
}

func assistantCalls(ids ...string) llmtest.Message {
	m := llmtest.Message{Role: "assistant"}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, llmtest.WireCall{
			ID: id, Type: "function",
			Function: llmtest.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`},
		})
	}
	return m
}

func toolAnswer(id, content string) llmtest.Message {
	return llmtest.Message{Role: "tool", ToolCallID: id, Content: content}
}

func fn(name string, params json.RawMessage) llmtest.Tool {
	return llmtest.Tool{Type: "function", Function: &llmtest.FunctionDef{Name: name, Parameters: params}}
}

var objectParams = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		req     llmtest.Request
		wantErr string // substring; empty means valid
	}{
		{name: "plain conversation", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			{Role: "system", Content: "sys"}, user("hi"),
			{Role: "assistant", Content: "hello"}, user("more"),
		}}},
		{name: "parallel calls answered in any order", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), assistantCalls("call_a", "call_b"), toolAnswer("call_b", "B"), toolAnswer("call_a", "A"), user("next"),
		}, Tools: []llmtest.Tool{fn("read_file", objectParams)}}},
		{name: "raw json schema", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("hi")},
			Tools: []llmtest.Tool{fn("t", json.RawMessage(`{"type":"object","properties":{}}`))}}},
		{name: "missing model", req: llmtest.Request{Messages: []llmtest.Message{user("hi")}},
			wantErr: "you must provide a model parameter"},
		{name: "empty messages", req: llmtest.Request{Model: "m"},
			wantErr: "Invalid 'messages': empty array"},
		{name: "orphan tool message", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), toolAnswer("call_a", "A"),
		}}, wantErr: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{name: "tool message after a user message", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), assistantCalls("call_a"), toolAnswer("call_a", "A"), user("x"), toolAnswer("call_a", "A"),
		}}, wantErr: "must be a response to a preceeding message with 'tool_calls'"},
		{name: "tool message answering an unknown id", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), assistantCalls("call_a"), toolAnswer("call_z", "Z"),
		}}, wantErr: "'tool_call_id' of 'call_z' not found"},
		{name: "unanswered call before user", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), assistantCalls("call_a", "call_x"), toolAnswer("call_a", "A"), user("again"),
		}}, wantErr: "The following tool_call_ids did not have response messages: call_x"},
		{name: "unanswered call at the end", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), assistantCalls("call_x"),
		}}, wantErr: "An assistant message with 'tool_calls' must be followed by tool messages"},
		{name: "assistant without content or calls", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), {Role: "assistant"}, user("x"),
		}}, wantErr: "Invalid value for 'content': expected a string, got null."},
		{name: "tool message without content", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), assistantCalls("call_a"), toolAnswer("call_a", ""),
		}}, wantErr: "Missing required parameter: 'messages[2].content'."},
		{name: "user message without content", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("")}},
			wantErr: "Missing required parameter: 'messages[0].content'."},
		{name: "tool call without arguments", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{
			user("hi"), {Role: "assistant", ToolCalls: []llmtest.WireCall{{ID: "c", Type: "function", Function: llmtest.FunctionCall{Name: "f"}}}},
			toolAnswer("c", "ok"),
		}}, wantErr: "'messages[1].tool_calls[0].function.arguments'"},
		{name: "unknown role", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{{Role: "robot", Content: "x"}}},
			wantErr: "Invalid value: 'robot'"},
		{name: "invalid tool name", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("hi")},
			Tools: []llmtest.Tool{fn("read file", objectParams)}}, wantErr: "string does not match pattern"},
		{name: "tool name too long", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("hi")},
			Tools: []llmtest.Tool{fn(strings.Repeat("a", 65), objectParams)}}, wantErr: "string does not match pattern"},
		{name: "parameters not an object schema", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("hi")},
			Tools: []llmtest.Tool{fn("t", json.RawMessage(`{"type":"string"}`))}}, wantErr: `got 'type: "string"'`},
		{name: "parameters missing", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("hi")},
			Tools: []llmtest.Tool{fn("t", nil)}}, wantErr: `schema must be a JSON Schema of 'type: "object"'`},
		{name: "duplicate tool names", req: llmtest.Request{Model: "m", Messages: []llmtest.Message{user("hi")},
			Tools: []llmtest.Tool{fn("t", objectParams), fn("t", objectParams)}}, wantErr: "duplicate function name 't'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := llmtest.Validate(tt.req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
			var ve *llmtest.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate error %T is not a *ValidationError", err)
			}
		})
	}
}
