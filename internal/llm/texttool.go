package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ToolCallAsTextError is an answer that carries a tool call in its text
// (a <tool_call> block or a bare JSON call naming an offered tool) and none
// in tool_calls: the server did not parse the model's tool-call format.
// Taking it for a final answer would end the task on nothing; another
// attempt would fail the same way, so it is a configuration error (IsSetup).
type ToolCallAsTextError struct {
	Tool string // the offered tool the text names
	Form string // "<tool_call> block" or "JSON call"
}

func (e *ToolCallAsTextError) Error() string {
	return fmt.Sprintf("the model wrote a tool call (%s) as text in its answer (%s) instead of a tool call: "+
		"the server does not parse this model's tool calls; fix the server: vLLM --enable-auto-tool-choice --tool-call-parser <the model's parser, e.g. hermes>, "+
		"llama.cpp --jinja, Ollama a model whose template supports tools (ollama show --template)", e.Tool, e.Form)
}

// IsToolCallAsText reports whether err is a *ToolCallAsTextError.
func IsToolCallAsText(err error) bool {
	var e *ToolCallAsTextError
	return errors.As(err, &e)
}

var (
	toolCallBlock = regexp.MustCompile(`(?s)<tool_call>\s*(.*?)\s*(?:</tool_call>|$)`)
	jsonFence     = regexp.MustCompile("(?s)^```(?:json)?\\s*(.*?)\\s*```$")
)

// TextToolCall checks an answer without tool calls for a call written as
// text, which servers leave there when they have no parser for the model's
// format (vLLM without --enable-auto-tool-choice, llama.cpp without --jinja,
// some Ollama templates). Only a call naming one of tools counts, so an
// answer that merely shows JSON is still an answer. It returns nil when
// content is an ordinary answer.
func TextToolCall(content string, tools []Tool) error {
	offered := make(map[string]bool, len(tools))
	for _, t := range tools {
		offered[t.Name] = true
	}
	if len(offered) == 0 || strings.TrimSpace(content) == "" {
		return nil
	}
	for _, m := range toolCallBlock.FindAllStringSubmatch(content, -1) {
		if name := calledTool(m[1], offered); name != "" {
			return &ToolCallAsTextError{Tool: name, Form: "<tool_call> block"}
		}
	}
	text := strings.TrimSpace(content)
	if m := jsonFence.FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	// Mistral and Llama templates' own markers, left in when unparsed.
	for _, p := range []string{"[TOOL_CALLS]", "<|python_tag|>"} {
		text = strings.TrimSpace(strings.TrimPrefix(text, p))
	}
	if name := calledTool(text, offered); name != "" {
		return &ToolCallAsTextError{Tool: name, Form: "JSON call"}
	}
	return nil
}

// calledTool is the offered tool a JSON call (an object or a list of them)
// names, "" when text is not one.
func calledTool(text string, offered map[string]bool) string {
	type call struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
		Function   *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	var calls []call
	var one call
	if err := json.Unmarshal([]byte(text), &one); err == nil {
		calls = []call{one}
	} else if err := json.Unmarshal([]byte(text), &calls); err != nil {
		return ""
	}
	for _, c := range calls {
		if c.Function != nil && offered[c.Function.Name] {
			return c.Function.Name
		}
		if offered[c.Name] && (c.Arguments != nil || c.Parameters != nil) {
			return c.Name
		}
	}
	return ""
}
