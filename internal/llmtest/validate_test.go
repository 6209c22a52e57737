package llmtest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
)

func user(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s}
}

func assistantCalls(ids ...string) openai.ChatCompletionMessage {
	m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, openai.ToolCall{
			ID: id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`},
		})
	}
	return m
}

func toolAnswer(id, content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: content}
}

func fn(name string, params any) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name, Parameters: params}}
}

var objectParams = jsonschema.Definition{Type: jsonschema.Object, Properties: map[string]jsonschema.Definition{
	"path": {Type: jsonschema.String},
}}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		req     openai.ChatCompletionRequest
		wantErr string // substring; empty means valid
	}{
		{name: "plain conversation", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "sys"}, user("hi"),
			{Role: openai.ChatMessageRoleAssistant, Content: "hello"}, user("more"),
		}}},
		{name: "parallel calls answered in any order", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), assistantCalls("call_a", "call_b"), toolAnswer("call_b", "B"), toolAnswer("call_a", "A"), user("next"),
		}, Tools: []openai.Tool{fn("read_file", objectParams)}}},
		{name: "raw json schema", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{fn("t", json.RawMessage(`{"type":"object","properties":{}}`))}}},
		{name: "missing model", req: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("hi")}},
			wantErr: "you must provide a model parameter"},
		{name: "empty messages", req: openai.ChatCompletionRequest{Model: "m"},
			wantErr: "Invalid 'messages': empty array"},
		{name: "orphan tool message", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), toolAnswer("call_a", "A"),
		}}, wantErr: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{name: "tool message after a user message", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), assistantCalls("call_a"), toolAnswer("call_a", "A"), user("x"), toolAnswer("call_a", "A"),
		}}, wantErr: "must be a response to a preceeding message with 'tool_calls'"},
		{name: "tool message answering an unknown id", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), assistantCalls("call_a"), toolAnswer("call_z", "Z"),
		}}, wantErr: "'tool_call_id' of 'call_z' not found"},
		{name: "unanswered call before user", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), assistantCalls("call_a", "call_x"), toolAnswer("call_a", "A"), user("again"),
		}}, wantErr: "The following tool_call_ids did not have response messages: call_x"},
		{name: "unanswered call at the end", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), assistantCalls("call_x"),
		}}, wantErr: "An assistant message with 'tool_calls' must be followed by tool messages"},
		{name: "assistant without content or calls", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), {Role: openai.ChatMessageRoleAssistant}, user("x"),
		}}, wantErr: "Invalid value for 'content': expected a string, got null."},
		{name: "tool message without content", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), assistantCalls("call_a"), toolAnswer("call_a", ""),
		}}, wantErr: "Missing required parameter: 'messages[2].content'."},
		{name: "user message without content", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("")}},
			wantErr: "Missing required parameter: 'messages[0].content'."},
		{name: "tool call without arguments", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			user("hi"), {Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "c", Type: "function", Function: openai.FunctionCall{Name: "f"}}}},
			toolAnswer("c", "ok"),
		}}, wantErr: "'messages[1].tool_calls[0].function.arguments'"},
		{name: "unknown role", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "robot", Content: "x"}}},
			wantErr: "Invalid value: 'robot'"},
		{name: "invalid tool name", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{fn("read file", objectParams)}}, wantErr: "string does not match pattern"},
		{name: "tool name too long", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{fn(strings.Repeat("a", 65), objectParams)}}, wantErr: "string does not match pattern"},
		{name: "parameters not an object schema", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{fn("t", jsonschema.Definition{Type: jsonschema.String})}}, wantErr: `got 'type: "string"'`},
		{name: "parameters missing", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{fn("t", nil)}}, wantErr: `schema must be a JSON Schema of 'type: "object"'`},
		{name: "duplicate tool names", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{user("hi")},
			Tools: []openai.Tool{fn("t", objectParams), fn("t", objectParams)}}, wantErr: "duplicate function name 't'"},
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
