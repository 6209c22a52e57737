package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/tools"
)

// maxToolName is the API's limit on tool names.
const maxToolName = 64

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the model-facing name of a server's tool: mcp__<server>__<tool>,
// with characters the API refuses replaced by '_' and cut at 64.
func ToolName(server, tool string) string {
	n := "mcp__" + server + "__" + unsafeNameChars.ReplaceAllString(tool, "_")
	if len(n) > maxToolName {
		n = n[:maxToolName]
	}
	return n
}

// tool is one server tool as a tools.Tool.
type tool struct {
	srv         *server
	name        string // exposed
	remote      string // the server's name
	description string
	def         llm.Tool
	schema      *jsonschema.Resolved // nil when the server's schema cannot be used to check arguments
	readOnly    bool
}

func newTool(s *server, t *sdk.Tool) *tool {
	params := objectSchema(t.InputSchema)
	out := &tool{srv: s, name: ToolName(s.name, t.Name), remote: t.Name,
		description: strings.TrimSpace(t.Description),
		readOnly:    t.Annotations != nil && t.Annotations.ReadOnlyHint}
	raw, err := json.Marshal(params)
	if err != nil { // a schema decoded from JSON marshals back; keep a usable one anyway
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	out.def = llm.Tool{Name: out.name, Description: out.description, Parameters: raw}
	out.schema = resolveSchema(params)
	return out
}

func (t *tool) Name() string         { return t.name }
func (t *tool) Definition() llm.Tool { return t.def }
func (t *tool) ReadOnly() bool       { return t.readOnly }

// Run checks the arguments against the server's schema, then calls it.
func (t *tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	raw := bytes.TrimSpace(args)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		problem := "got null"
		if err != nil {
			problem = err.Error()
		}
		return tools.Result{IsError: true, Content: fmt.Sprintf("invalid arguments for %s: expected a JSON object (%s)", t.name, problem)}, nil
	}
	if t.schema != nil {
		if err := t.schema.Validate(obj); err != nil {
			return tools.Result{IsError: true, Content: fmt.Sprintf("arguments of %s do not match its schema: %v; the schema is %s",
				t.name, err, tools.CapOutput(string(t.def.Parameters), 2000))}, nil
		}
	}
	return t.srv.call(ctx, t.remote, obj)
}

// objectSchema is the server's input schema as a JSON object the API
// accepts: type object, with properties.
func objectSchema(in any) map[string]any {
	var m map[string]any
	if b, err := json.Marshal(in); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	delete(m, "$schema")
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	return m
}

// resolveSchema prepares argument checking; a schema the checker cannot
// handle leaves the checking to the server rather than refusing the tool.
func resolveSchema(params map[string]any) *jsonschema.Resolved {
	b, err := json.Marshal(params)
	if err != nil {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	return r
}

// render turns a call's result into the text the model reads: text as it
// is, structured content as JSON when no text carries it already, and a
// note in place of images, audio and binary resources.
func render(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image (%s, %d bytes) not shown: images are not passed to the model]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s, %d bytes) not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			switch {
			case c.Resource == nil:
			case c.Resource.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s (%s, %d bytes) not shown]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content of type %T not shown]", c))
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && !carries(parts, b) {
			parts = append(parts, "structured content: "+string(b))
		}
	}
	if text := strings.Join(parts, "\n"); strings.TrimSpace(text) != "" {
		return text
	}
	return "(the tool returned no content)"
}

// carries reports whether one text part is the JSON b (as SDK servers put
// their structured output in a text part too).
func carries(parts []string, b []byte) bool {
	for _, p := range parts {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(p)) == nil && bytes.Equal(buf.Bytes(), b) {
			return true
		}
	}
	return false
}
