package agent

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

func TestSubagent(t *testing.T) {
	e := newEnv(t)
	e.write("lib/util.go", "package lib\n\nfunc Foo() int { return 42 }\n")
	e.write("docs/guide.md", "# Guide\n")
	e.write("docs/api.md", "# API\n")

	var mu sync.Mutex
	var childReqs []llmtest.Request
	parentTurn := 0
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(toolNames(req), "task") {
			childReqs = append(childReqs, req)
			if len(childReqs) == 1 {
				return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "lib/foo_test.go", "content": "package lib\n"}))
			}
			return llmtest.Text("Foo returns 42; added lib/foo_test.go.")
		}
		parentTurn++
		if parentTurn == 1 {
			r := llmtest.Calls(llmtest.Call("task", map[string]any{
				"goal": "Find what Foo returns and add a test file", "resources": []string{"lib/util.go", "docs"},
				"hints": "Foo is in lib; keep tests next to the code"}))
			r.Content = "Delegating the investigation of Foo."
			return r
		}
		return llmtest.Text("Parent done.")
	})
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "T1", Title: "Understand Foo", Description: "Learn what Foo does."})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || res.Answer != "Parent done." {
		t.Fatalf("result = %+v", res)
	}
	if len(childReqs) != 2 {
		t.Fatalf("the sub-agent made %d requests, want 2", len(childReqs))
	}
	brief := childReqs[0].Messages[1].Content
	for _, want := range []string{
		"Find what Foo returns and add a test file", // goal
		"func Foo() int { return 42 }",              // file resource, read with read_file
		"guide.md", "api.md",                        // directory resource, listed with list_dir
		"Foo is in lib; keep tests next to the code", // hint
		"task T1: Understand Foo",                    // the parent's context
		"Delegating the investigation of Foo.",       // the parent's last note
	} {
		if !strings.Contains(brief, want) {
			t.Errorf("sub-agent brief lacks %q:\n%s", want, brief)
		}
	}
	if !strings.Contains(system(childReqs[0]), "You are a sub-agent") {
		t.Errorf("sub-agent system prompt does not say it is one")
	}
	parentReqs := slices.DeleteFunc(e.srv.Requests(), func(r llmtest.Request) bool {
		return !slices.Contains(toolNames(r), "task")
	})
	toolAnswer := parentReqs[1].Messages[len(parentReqs[1].Messages)-1]
	if !strings.Contains(toolAnswer.Content, "Foo returns 42") {
		t.Errorf("the task tool result is %q, want the sub-agent's answer", toolAnswer.Content)
	}
	if res.Usage != e.client.Usage() {
		t.Errorf("usage = %+v, want every call of the run incl. the sub-agent's: %+v", res.Usage, e.client.Usage())
	}
	if !slices.Equal(res.FilesChanged, []string{"lib/foo_test.go"}) {
		t.Errorf("FilesChanged = %v, want the sub-agent's file", res.FilesChanged)
	}
	// The sub-agent's part of the usage, split out under its id and goal:
	// some of the run's tokens, not all (the parent's are not in it), and
	// what its subagent_end event says.
	if len(res.Subagents) != 1 || res.Subagents[0].ID != "T1.sub1" || res.Subagents[0].Goal != "Find what Foo returns and add a test file" {
		t.Fatalf("sub-agents %+v, want T1.sub1 with its goal", res.Subagents)
	}
	sub := res.Subagents[0].Usage
	if sub.Prompt <= 0 || sub.Completion <= 0 || sub.Prompt >= res.Usage.Prompt || sub.Completion >= res.Usage.Completion {
		t.Errorf("sub-agent usage %+v, want a part of the run's %+v", sub, res.Usage)
	}
	if ends := e.events.ofType(events.SubagentEnd); len(ends) == 1 && (ends[0].Usage == nil || ends[0].Usage.Prompt != sub.Prompt || ends[0].Usage.Completion != sub.Completion) {
		t.Errorf("subagent_end usage %+v, want %+v", ends[0].Usage, sub)
	}
	starts, ends := e.events.ofType(events.SubagentStart), e.events.ofType(events.SubagentEnd)
	if len(starts) != 1 || len(ends) != 1 || ends[0].Status != "completed" || ends[0].TaskID != "T1.sub1" {
		t.Errorf("subagent events: start %+v, end %+v", starts, ends)
	}
	childCalls := 0
	for _, ev := range e.events.ofType(events.ToolCall) {
		if ev.TaskID == "T1.sub1" && ev.Tool == "write_file" {
			childCalls++
		}
	}
	if childCalls != 1 {
		t.Errorf("the sub-agent's tool calls were not emitted under its id")
	}
}

func TestSubagentFailureIsToolError(t *testing.T) {
	e := newEnv(t)
	parentTurn := 0
	var mu sync.Mutex
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(toolNames(req), "task") {
			// The child keeps calling the same thing: stopped by loop detection.
			return llmtest.Calls(llmtest.Call("list_dir", map[string]any{"path": "."}))
		}
		parentTurn++
		if parentTurn == 1 {
			return llmtest.Calls(llmtest.Call("task", map[string]any{"goal": "spin", "hints": []string{"a", "b"}}))
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool && strings.Contains(last.Content, "the sub-agent failed") {
			return llmtest.Text("sub-agent failure seen")
		}
		return llmtest.Text("no failure seen: " + last.Content)
	})
	res, err := e.agent(nil).RunTask(t.Context(), Task{ID: "T2"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || res.Answer != "sub-agent failure seen" {
		t.Fatalf("result = %+v", res)
	}
	ends := e.events.ofType(events.SubagentEnd)
	if len(ends) != 1 || ends[0].Status != "failed" || !strings.Contains(ends[0].Text, "loop detected") {
		t.Errorf("subagent_end = %+v", ends)
	}
}

// TestSubagentCannotDelegateOrPlan: a child of a planning parent is offered
// neither task nor create_plan, and a task call it makes anyway is answered
// as an unknown tool, not run.
func TestSubagentCannotDelegateOrPlan(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var childReqs []llmtest.Request
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(system(req), "You are a sub-agent") {
			childReqs = append(childReqs, req)
			if last.Role == llm.RoleUser {
				return llmtest.Calls(llmtest.Call("task", map[string]any{"goal": "delegate again"}))
			}
			return llmtest.Text("child saw: " + last.Content)
		}
		if last.Role == llm.RoleUser {
			return llmtest.Calls(llmtest.Call("task", map[string]any{"goal": "look around"}))
		}
		return llmtest.Text("parent done")
	})
	res, err := e.agent(func(o *Options) { o.Planning = true }).RunTask(t.Context(), Task{ID: "P"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed || res.Answer != "parent done" {
		t.Fatalf("result = %+v", res)
	}
	if len(childReqs) != 2 {
		t.Fatalf("the sub-agent made %d requests, want 2", len(childReqs))
	}
	for i, req := range childReqs {
		if names := toolNames(req); slices.Contains(names, "task") || slices.Contains(names, CreatePlanToolName) || len(names) == 0 {
			t.Errorf("sub-agent request %d offers %v", i, names)
		}
	}
	answer := childReqs[1].Messages[len(childReqs[1].Messages)-1]
	if answer.Role != llm.RoleTool || !strings.Contains(answer.Content, `unknown tool "task"`) {
		t.Errorf("the sub-agent's task call was answered %q", answer.Content)
	}
	if n := len(e.events.ofType(events.SubagentStart)); n != 1 {
		t.Errorf("%d sub-agents started, want only the parent's one", n)
	}
}
