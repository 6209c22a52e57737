//go:build e2e

package main

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestE2EToolCallAsTextStopsTheRun: a model server that leaves the tool
// call in the text (vLLM without --enable-auto-tool-choice) ends the run at
// its first task with exit 2 and the setting to fix; the second task never
// starts and the call is not taken for the task's result. The run pauses:
// once the server is fixed, resume finishes it.
func TestE2EToolCallAsTextStopsTheRun(t *testing.T) {
	plan := `{"title":"Two","tasks":[
 {"id":"first","description":"TOKEN-TEXT: write a.txt","dependencies":[]},
 {"id":"second","description":"TOKEN-SECOND: write b.txt","dependencies":["first"]}]}`
	f := &fakeModel{plan: plan}
	e := newRunEnv(t, f)
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if !hasTool(req, "create_plan") && !hasTool(req, "decide") && strings.Contains(firstUser(req), "TOKEN-") {
			return llmtest.Text("<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"a\"}}\n</tool_call>")
		}
		return f.handle(req)
	})
	out, stderr, code := e.run("run", "--yes", "--json", "--max-retries", "2", "write two files")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if stop, _ := runEndOf(t, out)["data"].(map[string]any)["stop_reason"].(map[string]any); stop["reason"] != "setup_error" || !strings.Contains(stop["detail"].(string), "as text") {
		t.Errorf("run_end's stop_reason = %v, want setup_error naming the tool call as text", stop)
	}
	for _, want := range []string{"--enable-auto-tool-choice", "--jinja", "as text", "planagent resume"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, req := range e.srv.Requests() {
		if strings.Contains(firstUser(req), "TOKEN-SECOND") {
			t.Fatal("the second task started after a configuration error")
		}
	}
	n := 0
	for _, req := range e.srv.Requests() {
		if strings.Contains(firstUser(req), "TOKEN-TEXT") && !hasTool(req, "decide") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the first task's model was called %d times, want 1 (no retry of a configuration error)", n)
	}

	// Once the server parses tool calls, resume runs the waiting task.
	f.tasks = []scriptTask{
		{token: "TOKEN-TEXT", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a"})}},
		{token: "TOKEN-SECOND", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "b.txt", "content": "b"})}},
	}
	e.srv.Handle(f.handle) // after the script: the handler's lock publishes it
	out, stderr, code = e.run("resume")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if e.read("workspace/a.txt") != "a" || e.read("workspace/b.txt") != "b" {
		t.Errorf("after resume: a.txt %q, b.txt %q", e.read("workspace/a.txt"), e.read("workspace/b.txt"))
	}
}
