package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"tool call", Event{Type: ToolCall, TaskID: "t1", Tool: "read_file", Args: `{"path":"a.go"}`}, `[t1] → read_file {"path":"a.go"}`},
		{"tool result", Event{Type: ToolResult, Tool: "read_file", Text: "     1\tpackage a\n     2\t"}, "  ✓ read_file: 1\tpackage a …"},
		{"tool error", Event{Type: ToolResult, Tool: "edit_file", IsError: true, Text: "old_string occurs 2 times"}, "  ✗ edit_file: old_string occurs 2 times"},
		{"shell ok", Event{Type: ToolResult, Tool: "shell_exec", Text: "ok\n\nexit code: 0"}, "  ✓ shell_exec: exit code: 0"},
		{"shell failed", Event{Type: ToolResult, Tool: "shell_exec", Text: "FAIL\n\nexit code: 1"}, "  ✗ shell_exec: exit code: 1"},
		{"task end", Event{Type: TaskEnd, TaskID: "t1", Status: "completed", Text: "[1/3] x … completed, 1s"}, "[t1] task_end completed: [1/3] x … completed, 1s"},
		{"usage", Event{Type: ResponseEnd, Usage: &Usage{Prompt: 10, Completion: 2}}, "tokens: 10 prompt, 2 completion"},
		{"token not a line", Event{Type: Token, Text: "hi"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.ev); got != tt.want {
				t.Errorf("Line = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSinks(t *testing.T) {
	var jb, tb bytes.Buffer
	s := WithTask(Multi{NewJSON(&jb), NewText(&tb)}, "run-1", "t1")
	s.Emit(Event{Type: Token, Text: "thinking"})
	s.Emit(Event{Type: ToolCall, Tool: "glob", Args: `{"pattern":"*.go"}`})
	lines := strings.Split(strings.TrimSpace(jb.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("JSON lines: %q", jb.String())
	}
	var ev Event
	if err := json.Unmarshal([]byte(lines[1]), &ev); err != nil || ev.RunID != "run-1" || ev.TaskID != "t1" || ev.Time.IsZero() {
		t.Fatalf("event %+v, err %v", ev, err)
	}
	if want := "thinking\n[t1] → glob {\"pattern\":\"*.go\"}\n"; tb.String() != want {
		t.Errorf("text = %q, want %q", tb.String(), want)
	}
}

// A cut text ends in "…", so a title cut short does not read as a whole one
// (or run into what follows it); runes are never split.
func TestShorten(t *testing.T) {
	long := "Write notes/a.md, notes/b.md and notes/c.md from the outline in README.md"
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 60, "short"},
		{strings.Repeat("x", 60), 60, strings.Repeat("x", 60)},
		{strings.Repeat("x", 61), 60, strings.Repeat("x", 60) + "…"},
		{long, 20, "Write notes/a.md, no…"},
		{"éééé", 2, "éé…"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := Shorten(tt.s, tt.n); got != tt.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
