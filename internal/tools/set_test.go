package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSets(t *testing.T) {
	ws := newTestWorkspace(t, nil)
	coding := Coding(ws, Options{})
	wantCoding := []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "shell_exec"}
	wantRO := []string{"read_file", "list_dir", "glob", "grep"}
	tests := []struct {
		name string
		set  *Set
		want []string
	}{
		{"coding", coding, wantCoding},
		{"read-only func", ReadOnly(ws), wantRO},
		{"read-only subset", coding.ReadOnly(), wantRO},
		{"with appends", ReadOnly(ws).With(NewShellExec(ws, Options{})), append(slices.Clone(wantRO), "shell_exec")},
		{"with replaces in place", coding.With(NewReadFile(ws)), wantCoding},
		{"nil set", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.Names(); !slices.Equal(got, tt.want) {
				t.Errorf("Names() = %v, want %v", got, tt.want)
			}
			defs := tt.set.Definitions()
			if len(defs) != len(tt.want) {
				t.Fatalf("Definitions() has %d tools, want %d", len(defs), len(tt.want))
			}
			for i, d := range defs {
				if d.Name != tt.want[i] {
					t.Errorf("definition %d is %q, want %q", i, d.Name, tt.want[i])
				}
			}
		})
	}
	if _, ok := coding.Get("nope"); ok {
		t.Error(`Get("nope") found a tool`)
	}
	if len(coding.Names()) != 7 {
		t.Error("With must not modify the set it was called on")
	}
}

// TestSchemas checks what the model is offered, as JSON on the wire: an
// object schema with exactly the arguments the tool descriptions (*.md)
// document and the right required ones.
func TestSchemas(t *testing.T) {
	ws := newTestWorkspace(t, nil)
	tests := []struct {
		tool     string
		props    []string
		required []string
	}{
		{"read_file", []string{"end_line", "path", "start_line"}, []string{"path"}},
		{"write_file", []string{"content", "path"}, []string{"path", "content"}},
		{"edit_file", []string{"new_string", "old_string", "path"}, []string{"path", "old_string", "new_string"}},
		{"list_dir", []string{"path"}, nil},
		{"glob", []string{"pattern"}, []string{"pattern"}},
		{"grep", []string{"glob", "path", "pattern"}, []string{"pattern"}},
		{"shell_exec", []string{"command", "timeout_seconds"}, []string{"command"}},
	}
	set := Coding(ws, Options{})
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			tool, ok := set.Get(tt.tool)
			if !ok {
				t.Fatalf("no tool %s", tt.tool)
			}
			def := tool.Definition()
			if def.Description == "" {
				t.Errorf("definition = %+v, want a function with a description", def)
			}
			raw, err := json.Marshal(def.Parameters)
			if err != nil {
				t.Fatal(err)
			}
			var schema struct {
				Type       string                    `json:"type"`
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
				Defs       any                       `json:"$defs"`
				Ref        string                    `json:"$ref"`
			}
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Fatal(err)
			}
			if schema.Type != "object" || schema.Ref != "" || schema.Defs != nil {
				t.Errorf("schema %s: want a plain object schema", raw)
			}
			var props []string
			for name, p := range schema.Properties {
				props = append(props, name)
				if p["type"] == nil || p["description"] == nil {
					t.Errorf("property %s = %v, want type and description", name, p)
				}
			}
			slices.Sort(props)
			if !slices.Equal(props, tt.props) {
				t.Errorf("properties = %v, want %v", props, tt.props)
			}
			if !slices.Equal(schema.Required, tt.required) {
				t.Errorf("required = %v, want %v", schema.Required, tt.required)
			}
		})
	}
}

func TestCallBadInput(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{"a.txt": "a\n"})
	tests := []struct {
		name, tool, args string
		want             []string
	}{
		{"unknown tool", "delete_everything", `{}`, []string{`unknown tool "delete_everything"`, "available: read_file, write_file"}},
		{"invalid json", "read_file", `{"path": "a.txt"`, []string{"invalid arguments for read_file", `"path": string`}},
		{"not an object", "glob", `["*"]`, []string{"invalid arguments for glob", "expected a JSON object"}},
		{"null", "glob", `null`, []string{"invalid arguments for glob"}},
		{"wrong type", "read_file", `{"path": "a.txt", "start_line": "3"}`, []string{"start_line", "must be an integer", "string"}},
	}
	required := map[string]string{
		"read_file": "path", "write_file": "content", "edit_file": "old_string",
		"glob": "pattern", "grep": "pattern", "shell_exec": "command",
	}
	for tool, field := range required {
		args := `{"path": "a.txt", "unknown": 1}`
		if field == "path" {
			args = `{"start_line": 1}`
		}
		tests = append(tests, struct {
			name, tool, args string
			want             []string
		}{"missing " + field + " of " + tool, tool, args,
			[]string{"missing required argument(s) for " + tool, field}})
	}
	tests = append(tests, struct {
		name, tool, args string
		want             []string
	}{"null required", "write_file", `{"path": null, "content": "x"}`, []string{"missing required", "path"}},
		struct {
			name, tool, args string
			want             []string
		}{"empty arguments", "glob", ``, []string{"missing required", "pattern"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ws, tt.tool, tt.args)
			if !res.IsError {
				t.Fatalf("IsError = false, content %q", res.Content)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content %q does not contain %q", res.Content, w)
				}
			}
		})
	}
}

func TestCallRecoversPanic(t *testing.T) {
	boom := NewFunc("boom", "panics", true, func(context.Context, struct{}) (Result, error) { panic("kaboom") })
	res, err := Call(t.Context(), NewSet(boom), "boom", `{}`)
	if err == nil || !strings.Contains(err.Error(), "kaboom") || !res.IsError {
		t.Fatalf("Call = %+v, %v; want an error result and a Go error naming the panic", res, err)
	}
}

func TestCallCancelled(t *testing.T) {
	ws := newTestWorkspace(t, map[string]string{"a.txt": "a"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Call(ctx, Coding(ws, Options{}), "read_file", `{"path":"a.txt"}`)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
