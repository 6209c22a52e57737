package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/codeagent/codeagent/internal/jsonschema"
	"github.com/codeagent/codeagent/internal/llm"
)

// definition builds a tool's schema from its parameter struct P. Only a
// programming error (an unsupported field type) can make it fail, so it
// panics at construction time, where a test catches it, never during a run.
func definition[P any](name, description string) (llm.Tool, *jsonschema.Schema) {
	schema, err := jsonschema.For[P]()
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s: %v", name, err))
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s: %v", name, err))
	}
	return llm.Tool{Name: name, Description: strings.TrimSpace(description), Parameters: raw}, schema
}

// argError is a problem with the arguments the model sent; its text is
// written for the model to act on.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// decodeArgs parses the model's JSON arguments into P, checking the fields
// the schema marks required are present and not null. Unknown fields are
// ignored: models sometimes add harmless extras and refusing them only costs
// a round trip.
func decodeArgs[P any](tool string, schema *jsonschema.Schema, raw json.RawMessage) (P, error) {
	var p P
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return p, &argError{fmt.Sprintf("invalid arguments for %s: expected a JSON object like %s (%s)",
			tool, exampleArgs(schema), jsonProblem(err))}
	}
	var missing []string
	for _, name := range schema.Required {
		if v, ok := fields[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return p, &argError{fmt.Sprintf("missing required argument(s) for %s: %s; send %s",
			tool, strings.Join(missing, ", "), exampleArgs(schema))}
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && schema.Properties[typeErr.Field].Type != "" {
			want := string(schema.Properties[typeErr.Field].Type)
			if strings.ContainsAny(want[:min(1, len(want))], "aeiou") {
				want = "an " + want
			} else {
				want = "a " + want
			}
			return p, &argError{fmt.Sprintf("argument %s of %s must be %s, got a JSON %s",
				typeErr.Field, tool, want, typeErr.Value)}
		}
		return p, &argError{fmt.Sprintf("invalid arguments for %s: %v", tool, err)}
	}
	return p, nil
}

func jsonProblem(err error) string {
	if err == nil {
		return "got null"
	}
	return err.Error()
}

// exampleArgs renders the schema's properties as a compact reminder, e.g.
// {"path": string, "start_line"?: integer}.
func exampleArgs(schema *jsonschema.Schema) string {
	required := map[string]bool{}
	for _, r := range schema.Required {
		required[r] = true
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if required[names[i]] != required[names[j]] {
			return required[names[i]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		opt := "?"
		if required[n] {
			opt = ""
		}
		parts[i] = fmt.Sprintf("%q%s: %s", n, opt, schema.Properties[n].Type)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// errorResult is a failure the model should see and fix.
func errorResult(format string, a ...any) Result {
	return Result{Content: fmt.Sprintf(format, a...), IsError: true}
}

// toolError converts an error from a tool's work into a model-facing result.
func toolError(err error) Result {
	return Result{Content: err.Error(), IsError: true}
}
