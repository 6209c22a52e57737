//go:build e2e

package main

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// The workspace's AGENTS.md reaches the planner's first message and the
// system prompt of the task's agent, which reads it from its own copy.
func TestE2EAgentsMDReachesPlannerAndTasks(t *testing.T) {
	plan := `{"title":"Note","overview":"x","tasks":[{"id":"note","title":"Write note.txt","description":"TOKEN-NOTE: write note.txt","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-NOTE", steps: []llmtest.ToolCall{llmtest.Call("shell_exec", map[string]any{"command": "echo hi > note.txt"})}},
	}}
	e := newRunEnv(t, f)
	ws := gitWorkspace(t, e)
	writeFile(t, ws, "AGENTS.md", "# House rules\n\nHOUSE-RULE-42: end every file with a newline.\n")
	gitIn(t, ws, "add", "AGENTS.md")
	gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "agents")
	out, stderr, code := e.run("run", "--yes", "--workspace", ws, "write a note")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var planner, task bool
	for _, req := range e.srv.Requests() {
		if len(req.Messages) < 2 || req.Messages[0].Role != llm.RoleSystem {
			continue
		}
		switch {
		case hasTool(req, "create_plan"):
			planner = planner || strings.Contains(req.Messages[1].Content, "AGENTS.md:\n# House rules\n\nHOUSE-RULE-42")
		case strings.Contains(firstUser(req), "TOKEN-NOTE"):
			task = task || strings.Contains(req.Messages[0].Content, "## [project] AGENTS.md (workspace)\n\n# House rules\n\nHOUSE-RULE-42")
		}
	}
	if !planner || !task {
		t.Errorf("AGENTS.md reached the planner: %v, the task's agent: %v", planner, task)
	}
}
