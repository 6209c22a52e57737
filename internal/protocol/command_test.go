package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fullCommand() *Command {
	return &Command{
		ID: "t2", RunID: "r-20260101-1", Attempt: 2, Title: "Add a /health endpoint",
		Dependencies: []Dependency{{ID: "t1", Summary: "Created the server in cmd/server.\nRoutes live in router.go."}, {ID: "t0"}},
		Resources:    []string{"cmd/server/main.go", "router.go"},
		Hints:        []string{"Reuse the router.", "  indented hint"},
		Acceptance:   []string{"go test ./... passes", "GET /health returns 200"},
		Timeout:      Duration(30 * time.Minute),
		Body:         "# Task\n\nAdd the endpoint.\n",
	}
}

func TestCommandRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Command)
	}{
		{"full", func(*Command) {}},
		{"minimal", func(c *Command) { *c = Command{ID: "t1", RunID: "r1", Attempt: 1, Title: "x"} }},
		{"body with --- lines", func(c *Command) { c.Body = "---\nintro\n---\n\n---\ntext\n--- \n" }},
		{"body starting with blank lines", func(c *Command) { c.Body = "\n\n# after blank lines" }},
		{"body with CRLF", func(c *Command) { c.Body = "\r\nline one\r\n---\r\nline two\r\n" }},
		{"body without final newline", func(c *Command) { c.Body = "no newline" }},
		{"unicode", func(c *Command) {
			c.Title = "实现上下文层 — ünïcödé ✓ 🚀"
			c.Hints = []string{"参考 combine_context.py", "emoji 🧪"}
			c.Body = "## 任务\n\n组合 global/project/task 三层上下文。\n"
		}},
		{"title that looks like YAML", func(c *Command) { c.Title = "---" }},
		{"token budget", func(c *Command) { c.BudgetTokens = 50000 }},
		{"numeric and boolean-looking strings", func(c *Command) {
			c.ID, c.Title, c.Hints = "1", "true", []string{"null", "1.5", "~", "yes", "0x10"}
		}},
		{"multi-line strings with awkward whitespace", func(c *Command) {
			c.Title = "\t---\n---"
			c.Hints = []string{"trailing  \n---\nx  ", " leading space\nsecond", "a\r\nb", "\n\nstarts with newlines"}
			c.Dependencies[0].Summary = "\tTabbed\n\tlines\n"
		}},
		{"control characters", func(c *Command) { c.Title = "bell\a nul\x00 del\x7f nel\u0085 ls\u2028" }},
		{"invalid UTF-8", func(c *Command) { c.Title = "bad \xff\xfe bytes"; c.Body = "body \xff" }},
		{"long strings", func(c *Command) {
			c.Title = strings.Repeat("word ", 100)
			c.Hints = []string{strings.Repeat("\"quoted\" ", 40) + "\n" + strings.Repeat("x", 300)}
		}},
		{"timeout in nanoseconds", func(c *Command) { c.Timeout = Duration(1234567891) }},
		{"empty lists become absent", func(c *Command) { c.Resources, c.Hints = []string{}, []string{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fullCommand()
			tt.edit(c)
			data, err := c.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			back, err := ParseCommand(c.ID+".md", data)
			if err != nil {
				t.Fatalf("ParseCommand: %v\nfile:\n%s", err, data)
			}
			c.normalize()
			if !reflect.DeepEqual(c, back) {
				t.Fatalf("round trip differs\n got: %#v\nwant: %#v\nfile:\n%s", back, c, data)
			}
		})
	}
}

func TestCommandMarshalFormat(t *testing.T) {
	data, err := (&Command{ID: "t1", RunID: "r1", Attempt: 1, Title: "Do it", Timeout: Duration(90 * time.Second), Body: "Body.\n"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "---\nid: t1\nrun_id: r1\nattempt: 1\ntitle: Do it\ntimeout: 1m30s\n---\n\nBody.\n"
	if string(data) != want {
		t.Fatalf("Marshal =\n%q\nwant\n%q", data, want)
	}
}

func TestParseCommandAcceptsHandWritten(t *testing.T) {
	in := "\ufeff---\r\nid: t1\r\nrun_id: r1\r\nattempt: 1\r\ntitle: Fix it\r\n" +
		"dependencies: [{id: t0}]\r\nresources: [a.go, b.go]\r\ntimeout: 600\r\n---\r\n# Body\r\n"
	c, err := ParseCommand("commands/t1.md", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{ID: "t1", RunID: "r1", Attempt: 1, Title: "Fix it", Dependencies: []Dependency{{ID: "t0"}},
		Resources: []string{"a.go", "b.go"}, Timeout: Duration(10 * time.Minute), Body: "# Body\r\n"}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %#v\nwant %#v", c, want)
	}
}

const validHeader = "id: t1\nrun_id: r1\nattempt: 1\ntitle: Do it\n"

func TestParseCommandErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		data    string
		field   string
		line    int
		problem string // substring
	}{
		{name: "no front matter", data: "# just markdown\n", problem: "missing front matter", line: 1},
		{name: "empty file", data: "", problem: "missing front matter", line: 1},
		{name: "unterminated", data: "---\n" + validHeader + "body\n", problem: "unterminated front matter"},
		{name: "only opening line", data: "---", problem: "unterminated front matter"},
		{name: "invalid YAML", data: "---\nid: [t1\n---\n", problem: "not valid YAML"},
		{name: "not a mapping", data: "---\n- a\n- b\n---\n", problem: "not a list", line: 2},
		{name: "second YAML document", data: "---\n" + validHeader + "...\nextra: 1\n---\n", problem: "not valid YAML: line 6"},
		{name: "empty front matter", data: "---\n---\nbody", field: "id", problem: "required"},
		{name: "unknown field", data: "---\n" + validHeader + "priority: high\n---\n", field: "priority", line: 6, problem: "unknown field; known fields are id, run_id"},
		{name: "unknown nested field", data: "---\n" + validHeader + "dependencies:\n  - id: t0\n    why: x\n---\n", field: "dependencies[0].why", line: 8, problem: "unknown field"},
		{name: "duplicate field", data: "---\n" + validHeader + "title: again\n---\n", field: "title", line: 6, problem: "given twice (first on line 5)"},
		{name: "attempt not a number", data: "---\nid: t1\nrun_id: r1\nattempt: one\ntitle: x\n---\n", field: "attempt", line: 4, problem: `must be a whole number, got "one"`},
		{name: "attempt zero", data: "---\nid: t1\nrun_id: r1\nattempt: 0\ntitle: x\n---\n", field: "attempt", problem: "must be >= 1"},
		{name: "attempt missing", data: "---\nid: t1\nrun_id: r1\ntitle: x\n---\n", field: "attempt", problem: "must be >= 1"},
		{name: "title missing", data: "---\nid: t1\nrun_id: r1\nattempt: 1\n---\n", field: "title", problem: "required"},
		{name: "title is a list", data: "---\nid: t1\nrun_id: r1\nattempt: 1\ntitle: [a]\n---\n", field: "title", line: 5, problem: "must be a string, not a list"},
		{name: "run_id missing", data: "---\nid: t1\nattempt: 1\ntitle: x\n---\n", field: "run_id", problem: "required"},
		{name: "id missing", data: "---\nrun_id: r1\nattempt: 1\ntitle: x\n---\n", field: "id", problem: "required"},
		{name: "hostile id", file: "x", data: "---\nid: ../../etc/passwd\nrun_id: r1\nattempt: 1\ntitle: x\n---\n", field: "id", problem: "starts with '.'"},
		{name: "id with slash", file: "x", data: "---\nid: a/b\nrun_id: r1\nattempt: 1\ntitle: x\n---\n", field: "id", problem: "contains '/'"},
		{name: "hostile run id", data: "---\nid: t1\nrun_id: ../r\nattempt: 1\ntitle: x\n---\n", field: "run_id", problem: "starts with '.'"},
		{name: "id does not match file", file: "commands/t2.md", data: "---\n" + validHeader + "---\n", field: "id", problem: `a file named t2.md must have id "t2"`},
		{name: "invalid dependency id", data: "---\n" + validHeader + "dependencies:\n  - id: ../t0\n---\n", field: "dependencies[0].id", problem: "starts with '.'"},
		{name: "dependency without id", data: "---\n" + validHeader + "dependencies:\n  - summary: s\n---\n", field: "dependencies[0].id", problem: "empty"},
		{name: "dependency as a string", data: "---\n" + validHeader + "dependencies: [t0]\n---\n", field: "dependencies[0]", line: 6, problem: `must be a mapping like {id: t1, summary: ...}, got "t0"`},
		{name: "self dependency", data: "---\n" + validHeader + "dependencies: [{id: t1}]\n---\n", field: "dependencies[0].id", problem: "cannot depend on itself"},
		{name: "duplicate dependency", data: "---\n" + validHeader + "dependencies: [{id: t0}, {id: t0}]\n---\n", field: "dependencies[1].id", problem: "listed twice"},
		{name: "hints not a list", data: "---\n" + validHeader + "hints: be careful\n---\n", field: "hints", line: 6, problem: `must be a list, got "be careful"`},
		{name: "hint is a mapping", data: "---\n" + validHeader + "hints:\n  - a: b\n---\n", field: "hints[0]", line: 7, problem: "must be a string, not a mapping"},
		{name: "negative timeout", data: "---\n" + validHeader + "timeout: -5m\n---\n", field: "timeout", problem: "must not be negative"},
		{name: "bad timeout", data: "---\n" + validHeader + "timeout: soon\n---\n", field: "timeout", line: 6, problem: `"soon" is not a duration`},
		{name: "oversized", data: "---\n" + validHeader + "---\n" + strings.Repeat("x", MaxFileSize), problem: "larger than the 1048576-byte (1 MiB) limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "commands/t1.md"
			}
			c, err := ParseCommand(file, []byte(tt.data))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseCommand = %#v, %v; want a *ParseError", c, err)
			}
			if pe.File != file || pe.Field != tt.field || pe.Line != tt.line || !strings.Contains(pe.Problem, tt.problem) {
				t.Fatalf("error = %#v\nwant File %q Field %q Line %d Problem containing %q", pe, file, tt.field, tt.line, tt.problem)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := ParseCommand("commands/t1.md", []byte("---\nid: t1\nrun_id: r1\nattempt: 0\ntitle: x\n---\n"))
	if want := `commands/t1.md: field "attempt": must be >= 1`; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	_, err = ParseCommand("commands/t1.md", []byte("---\n"+validHeader+"foo: 1\n---\n"))
	if want := `commands/t1.md:6: field "foo": unknown field; known fields are id, run_id, attempt, title, dependencies, resources, hints, acceptance, timeout, workspace, budget_tokens, traceparent, setup`; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestCommandMarshalRefusesInvalid(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(c *Command)
		field string
	}{
		{"no id", func(c *Command) { c.ID = "" }, "id"},
		{"hostile id", func(c *Command) { c.ID = "../x" }, "id"},
		{"attempt 0", func(c *Command) { c.Attempt = 0 }, "attempt"},
		{"no title", func(c *Command) { c.Title = "" }, "title"},
		{"bad dependency", func(c *Command) { c.Dependencies[1].ID = "a b" }, "dependencies[1].id"},
		{"negative timeout", func(c *Command) { c.Timeout = -1 }, "timeout"},
		{"body too large", func(c *Command) { c.Body = strings.Repeat("x", MaxFileSize) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fullCommand()
			tt.edit(c)
			_, err := c.Marshal()
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Field != tt.field {
				t.Fatalf("Marshal error = %v, want a *ParseError for field %q", err, tt.field)
			}
		})
	}
}

func TestCommandWorkspace(t *testing.T) {
	c := &Command{ID: "t1", RunID: "run-1", Attempt: 2, Title: "x", Workspace: "attempts/run-1/t1.2", Body: "do",
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCommand("t1.md", b)
	if err != nil || back.Workspace != c.Workspace || back.TraceParent != c.TraceParent {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	bad := *c
	bad.TraceParent = "00-xyz"
	if _, err := bad.Marshal(); err == nil || !strings.Contains(err.Error(), "traceparent") {
		t.Errorf("a malformed traceparent: %v", err)
	}
	for _, bad := range []string{"/etc", "../x", "attempts/../../etc", "workspace", "attempts/a//b", "attempts/a/../../.."} {
		c.Workspace = bad
		if _, err := c.Marshal(); err == nil || !strings.Contains(err.Error(), "workspace") {
			t.Errorf("workspace %q: err %v, want a workspace error", bad, err)
		}
	}
}
