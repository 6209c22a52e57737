package llmtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ValidationError is a request the real API answers with HTTP 400. Message
// is the real API's text so that tests see what production would.
type ValidationError struct {
	Message string
	Param   string // e.g. "messages.[2].role"; empty when the API sends null
	Code    string // e.g. "context_length_exceeded"; empty when the API sends null
}

func (e *ValidationError) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return fmt.Sprintf("%s (param %s)", e.Message, e.Param)
}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Validate applies the rules the OpenAI chat completions endpoint enforces
// with HTTP 400, as far as they concern what this project sends. It works on
// the decoded request, so a field a client dropped with omitempty (empty
// tool content, empty arguments) counts as missing, as it does for the API.
func Validate(req Request) error {
	if req.Model == "" {
		return &ValidationError{Message: "you must provide a model parameter"}
	}
	if len(req.Messages) == 0 {
		return &ValidationError{
			Message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
			Param:   "messages",
			Code:    "empty_array",
		}
	}
	if err := validateTools(req.Tools); err != nil {
		return err
	}
	return validateMessages(req.Messages)
}

func validateTools(tools []Tool) error {
	seen := map[string]bool{}
	for i, t := range tools {
		if t.Type != typeFunction {
			return &ValidationError{
				Message: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' and 'custom'.", t.Type),
				Param:   fmt.Sprintf("tools[%d].type", i),
				Code:    "invalid_value",
			}
		}
		if t.Function == nil {
			return missing(fmt.Sprintf("tools[%d].function", i))
		}
		name := t.Function.Name
		if !toolNamePattern.MatchString(name) {
			return &ValidationError{
				Message: fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i),
				Param:   fmt.Sprintf("tools[%d].function.name", i),
				Code:    "invalid_value",
			}
		}
		if seen[name] {
			return &ValidationError{
				Message: fmt.Sprintf("Invalid 'tools': duplicate function name '%s'. Function names must be unique.", name),
				Param:   "tools",
			}
		}
		seen[name] = true
		if got, ok := objectSchema(t.Function.Parameters); !ok {
			return &ValidationError{
				Message: fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%s\"'.", name, got),
				Param:   fmt.Sprintf("tools[%d].function.parameters", i),
				Code:    "invalid_function_parameters",
			}
		}
	}
	return nil
}

// objectSchema reports whether params is a JSON object with "type":
// "object". got is the type found, for the error text.
func objectSchema(raw json.RawMessage) (got string, ok bool) {
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return "None", false
	}
	typ, _ := schema["type"].(string)
	if typ != "object" {
		if typ == "" {
			typ = "None"
		}
		return typ, false
	}
	return typ, true
}

func validateMessages(msgs []Message) error {
	// The tool calls of the assistant message that the current run of tool
	// messages answers; nil outside such a run.
	var open []WireCall
	openAt := -1
	answered := map[string]bool{}

	closeRun := func() error {
		var missingIDs []string
		for _, c := range open {
			if !answered[c.ID] {
				missingIDs = append(missingIDs, c.ID)
			}
		}
		if len(missingIDs) > 0 {
			return &ValidationError{
				Message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(missingIDs, ", "),
				Param:   fmt.Sprintf("messages.[%d].role", openAt),
			}
		}
		open, openAt = nil, -1
		clear(answered)
		return nil
	}

	for i, m := range msgs {
		if m.Role != roleTool {
			if err := closeRun(); err != nil {
				return err
			}
		}
		switch m.Role {
		case roleSystem, roleDeveloper, roleUser:
			if !hasContent(m) {
				return missing(fmt.Sprintf("messages[%d].content", i))
			}
		case roleAssistant:
			if err := validateAssistant(i, m); err != nil {
				return err
			}
			if len(m.ToolCalls) > 0 {
				open, openAt = m.ToolCalls, i
			}
		case roleTool:
			if open == nil {
				return &ValidationError{
					Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
					Param:   fmt.Sprintf("messages.[%d].role", i),
				}
			}
			if m.ToolCallID == "" {
				return missing(fmt.Sprintf("messages[%d].tool_call_id", i))
			}
			if !callsInclude(open, m.ToolCallID) {
				return &ValidationError{
					Message: fmt.Sprintf("Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", m.ToolCallID),
					Param:   fmt.Sprintf("messages.[%d].tool_call_id", i),
				}
			}
			if !hasContent(m) {
				return missing(fmt.Sprintf("messages[%d].content", i))
			}
			answered[m.ToolCallID] = true
		case roleFunction:
			if m.Name == "" {
				return missing(fmt.Sprintf("messages[%d].name", i))
			}
		default:
			return &ValidationError{
				Message: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role),
				Param:   fmt.Sprintf("messages[%d].role", i),
				Code:    "invalid_value",
			}
		}
	}
	return closeRun()
}

func validateAssistant(i int, m Message) error {
	if !hasContent(m) && len(m.ToolCalls) == 0 && m.FunctionCall == nil {
		return &ValidationError{
			Message: "Invalid value for 'content': expected a string, got null.",
			Param:   fmt.Sprintf("messages.[%d].content", i),
		}
	}
	ids := map[string]bool{}
	for j, c := range m.ToolCalls {
		at := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
		switch {
		case c.ID == "":
			return missing(at + ".id")
		case c.Type != typeFunction:
			return &ValidationError{
				Message: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'.", c.Type),
				Param:   at + ".type",
				Code:    "invalid_value",
			}
		case c.Function.Name == "":
			return missing(at + ".function.name")
		case c.Function.Arguments == "":
			return missing(at + ".function.arguments")
		case ids[c.ID]:
			return &ValidationError{
				Message: fmt.Sprintf("Invalid parameter: duplicate tool_call_id '%s' in 'tool_calls'.", c.ID),
				Param:   at + ".id",
			}
		}
		ids[c.ID] = true
	}
	return nil
}

func missing(param string) error {
	return &ValidationError{
		Message: fmt.Sprintf("Missing required parameter: '%s'.", param),
		Param:   param,
		Code:    "missing_required_parameter",
	}
}

func hasContent(m Message) bool {
	return m.Content != ""
}

func callsInclude(calls []WireCall, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}
