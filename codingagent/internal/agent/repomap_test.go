package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/repomap"
)

// The system prompt's repo map follows the focused files: once the agent has
// read a file, that file ranks first in the next request's map.
func TestRepoMapFollowsFocus(t *testing.T) {
	e := newEnv(t)
	e.write("go.mod", "module example.com/m\n")
	e.write("core/core.go", "package core\n\n// Engine runs things.\ntype Engine struct{}\n\nfunc (e *Engine) Start() error { return nil }\n")
	e.write("a/a.go", "package a\n\nimport \"example.com/m/core\"\n\nfunc A() { (&core.Engine{}).Start() }\n")
	e.write("b/b.go", "package b\n\nimport \"example.com/m/core\"\n\nfunc B() { (&core.Engine{}).Start() }\n")
	e.write("leaf/leaf.go", "package leaf\n\nfunc Lonely() {}\n")
	e.srv.Enqueue(
		llmtest.Calls(llmtest.Call("read_file", map[string]any{"path": "leaf/leaf.go"})),
		llmtest.Text("done"),
	)
	var calls [][]string
	a := e.agent(func(o *Options) {
		prompter := repomap.Prompter(repomap.Options{Root: o.Workspace.Root(), Tokens: 1024}, func(err error) { t.Error(err) })
		o.RepoMap = func(ctx context.Context, focus []string) string {
			calls = append(calls, focus)
			return prompter(ctx, focus)
		}
	})
	a.reshapeEachTurn = true // the map follows the focus at each reshape; here every request is one
	if _, err := a.RunTask(t.Context(), Task{ID: "map"}); err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	topFile := func(sys string) string {
		i := strings.Index(sys, "## Repository map")
		if i < 0 {
			t.Fatalf("no repo map in the system prompt:\n%s", sys)
		}
		rest := sys[i:]
		rest = rest[strings.Index(rest, "```\n")+4:]
		return rest[:strings.IndexByte(rest, '\n')]
	}
	reqs := e.srv.Requests()
	if got := topFile(system(reqs[0])); got != "core/core.go:" {
		t.Errorf("first request's top file %q, want core/core.go:", got)
	}
	if got := topFile(system(reqs[1])); got != "leaf/leaf.go:" {
		t.Errorf("after reading leaf.go the top file is %q, want leaf/leaf.go:", got)
	}
	if len(calls) != 2 {
		t.Errorf("RepoMap called %d times (%v), want once per focus change", len(calls), calls)
	}
}
