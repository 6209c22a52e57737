package llmclient

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llm"
)

// The conversions below are the only place the project's types meet
// go-openai's: the rest of the code never sees the wire library.

func wireMessages(msgs []llm.Message) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		out[i] = openai.ChatCompletionMessage{
			Role:       m.Role,
			Content:    m.Content,
			ToolCalls:  wireCalls(m.ToolCalls),
			ToolCallID: m.ToolCallID,
		}
	}
	return out
}

func wireCalls(calls []llm.ToolCall) []openai.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]openai.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = openai.ToolCall{
			ID:       c.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments},
		}
	}
	return out
}

func wireTools(tools []llm.Tool) []openai.Tool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]openai.Tool, len(tools))
	for i, t := range tools {
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		}}
	}
	return out
}

// fromWire is the assistant message of a non-streamed answer.
func fromWire(m openai.ChatCompletionMessage) llm.Message {
	out := llm.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out
}
