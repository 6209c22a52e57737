package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func TestDeduplication(t *testing.T) {
	e := newEnv(t)
	var src strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&src, "// line %d of a.go\n", i)
	}
	e.write("a.go", src.String())
	e.write("b.go", "package b\n")
	newContent := strings.Repeat("// rewritten c.go line\n", 30)
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "a.go"})),
		llmtest.Calls(llmtest.Call("edit_file", map[string]any{"path": "./a.go", "old_string": "// line 7 of a.go", "new_string": "// EDITED line 7"})),
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "a.go"})),
		llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "seq 1 3000"})),
		llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "c.go", "content": newContent})),
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "b.go"})),
		llmtest.Text("done"),
	)
	a := e.agent(nil)
	// The shaping rules, applied at every request: how often they apply is
	// stableView's business (TestRequestPrefixStable).
	a.reshapeEachTurn = true
	res, err := a.RunTask(t.Context(), Task{ID: "dedup"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed {
		t.Fatalf("result = %+v", res)
	}
	reqs := e.srv.Requests()
	toolMsgs := func(req llmtest.Request) []llmtest.Message {
		var out []llmtest.Message
		for _, m := range req.Messages {
			if m.Role == llm.RoleTool {
				out = append(out, m)
			}
		}
		return out
	}

	t.Run("latest round complete the first time", func(t *testing.T) {
		got := toolMsgs(reqs[1])
		if len(got) != 1 || !strings.Contains(got[0].Content, "// line 40 of a.go") {
			t.Fatalf("request 2's read_file result is not complete: %+v", got)
		}
		shell := toolMsgs(reqs[4])[3].Content
		if !strings.Contains(shell, "\n3000") || !strings.Contains(shell, "\n1500\n") {
			t.Errorf("request 5's shell result is cut: %d chars", len(shell))
		}
	})
	t.Run("file content once, in the system prompt, current", func(t *testing.T) {
		req := reqs[4] // after the edit and the read again
		text := allText(req)
		if n := strings.Count(text, "// line 40 of a.go"); n != 1 {
			t.Errorf("a.go's last line appears %d times in request 5, want once", n)
		}
		if !strings.Contains(system(req), "// line 40 of a.go") || !strings.Contains(system(req), "// EDITED line 7") {
			t.Errorf("system prompt lacks a.go's current content:\n%s", system(req))
		}
		if strings.Contains(system(req), "// line 7 of a.go") {
			t.Errorf("system prompt shows a.go before the edit")
		}
		for _, i := range []int{0, 2} {
			if got := toolMsgs(req)[i].Content; got != "[read_file a.go: 40 lines — current content in focused files]" {
				t.Errorf("older read_file result %d = %q", i, got)
			}
		}
	})
	t.Run("older shell output cut, older write arguments abbreviated", func(t *testing.T) {
		req := reqs[6]
		got := toolMsgs(req)
		shell := got[3].Content
		if len(shell) > shellKeep+100 || !strings.Contains(shell, "chars cut") || !strings.HasPrefix(shell, "1\n2\n") ||
			!strings.HasSuffix(shell, "3000\n\nexit code: 0") {
			t.Errorf("older shell output not cut to head and tail (%d chars): %.200q", len(shell), shell)
		}
		if n := strings.Count(allText(req), "// rewritten c.go line"); n != 30 {
			t.Errorf("c.go's lines appear %d times in request 6, want 30 (once, in the system prompt)", n)
		}
		if got := toolMsgs(req)[5].Content; got != "package b" && !strings.Contains(got, "package b") {
			t.Errorf("latest read_file result = %q", got)
		}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.Function.Name == "write_file" && !strings.Contains(c.Function.Arguments, "current content in focused files") {
					t.Errorf("older write_file arguments sent in full: %.100s", c.Function.Arguments)
				}
			}
		}
	})
	t.Run("the session keeps full results", func(t *testing.T) {
		var full []string
		for _, m := range a.Messages() {
			if m.Role == llm.RoleTool {
				full = append(full, m.Content)
			}
		}
		if !strings.Contains(full[0], "// line 40 of a.go") || !strings.Contains(full[3], "\n1500\n") {
			t.Errorf("Messages() lost full tool results")
		}
	})
}

func TestFocusEviction(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"old.txt", "edited.txt", "new.txt"} {
		e.write(name, strings.Repeat(name+"\n", 50)) // 750, 900, 750 chars with line numbers
	}
	tests := []struct {
		name    string
		capSize int
		want    []string
	}{
		{name: "all fit", capSize: 10000, want: []string{"old.txt", "edited.txt", "new.txt"}},
		{name: "oldest unedited goes first", capSize: 1700, want: []string{"edited.txt", "new.txt"}},
		{name: "edited kept longest", capSize: 1000, want: []string{"edited.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFocusSet(tt.capSize, 0)
			f.touch("old.txt", false)
			f.touch("edited.txt", true)
			f.touch("new.txt", false)
			f.touch("gone.txt", false)
			var got []string
			for _, ff := range f.render(e.ws) {
				got = append(got, ff.path)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("focused = %v, want %v", got, tt.want)
			}
			if strings.Join(f.paths(), ",") != strings.Join(tt.want, ",") {
				t.Errorf("set after render = %v, want %v", f.paths(), tt.want)
			}
		})
	}
}

// TestSupersededReads: a file read three times between edits, then pushed
// out of the focused files, comes back once (its latest read); the
// earlier reads are one-line pointers, so no stale version reaches the model.
func TestSupersededReads(t *testing.T) {
	e := newEnv(t)
	var src strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&src, "// line %d of a.go\n", i)
	}
	e.write("a.go", src.String())
	e.write("b.go", "package b\n")
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "a.go"})),
		llmtest.Calls(llmtest.Call("edit_file", map[string]any{"path": "a.go", "old_string": "// line 3 of a.go", "new_string": "// THIRD"})),
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "a.go"})),
		llmtest.Calls(llmtest.Call("edit_file", map[string]any{"path": "a.go", "old_string": "// line 4 of a.go", "new_string": "// FOURTH"})),
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "a.go"})),
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "b.go"})),
		llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "echo done"})),
		llmtest.Text("done"),
	)
	a := e.agent(func(o *Options) { o.FocusFiles = 1 }) // b.go pushes a.go out
	a.reshapeEachTurn = true                            // the rules, at every request
	if _, err := a.RunTask(t.Context(), Task{ID: "superseded"}); err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	reqs := e.srv.Requests()
	last := reqs[len(reqs)-1]
	var reads []string
	for _, m := range last.Messages {
		if m.Role == llm.RoleTool && strings.Contains(m.Content, "a.go") && !strings.HasPrefix(m.Content, "edited") {
			reads = append(reads, m.Content)
		}
	}
	if len(reads) != 3 {
		t.Fatalf("a.go reads in the last request: %q", reads)
	}
	for _, r := range reads[:2] {
		if r != "[read_file a.go: superseded by a later read of it below]" {
			t.Errorf("earlier read sent as %q, want a one-line pointer", r)
		}
	}
	if !strings.Contains(reads[2], "// THIRD") || !strings.Contains(reads[2], "// FOURTH") || !strings.Contains(reads[2], "// line 30 of a.go") {
		t.Errorf("the latest read is not sent in full: %q", reads[2])
	}
	text := allText(last)
	if strings.Contains(text, "// line 3 of a.go\n") || strings.Contains(text, "// line 4 of a.go\n") {
		t.Errorf("a stale version of a.go reached the model")
	}
	if strings.Contains(system(last), `<file path="a.go"`) || !strings.Contains(system(last), `<file path="b.go"`) {
		t.Errorf("focused files: want b.go only (FocusFiles 1)")
	}
}
