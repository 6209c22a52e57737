package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/tools"
)

// benchAgent is an agent whose history holds a 200-message session of a
// typical shape: files read (often again), edited and rewritten, and
// commands with long output.
func benchAgent(b *testing.B) *Agent {
	b.Helper()
	dir := b.TempDir()
	for i := range 12 {
		var src strings.Builder
		fmt.Fprintf(&src, "package pkg%d\n\n", i)
		for j := range 150 {
			fmt.Fprintf(&src, "func F%d_%d(x int) int { return x + %d } // helper number %d\n", i, j, j, j)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte(src.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	a, set := offlineAgent(b, dir, "# Task bench: refactor the helpers")
	ctx := b.Context()
	for round := 0; len(a.hist.msgs) < 200; round++ {
		var name string
		var args map[string]any
		file := fmt.Sprintf("f%d.go", round%12)
		switch round % 4 {
		case 0, 1:
			name, args = "read_file", map[string]any{"path": file}
		case 2:
			name, args = "edit_file", map[string]any{"path": file,
				"old_string": fmt.Sprintf("// helper number %d\n", round), "new_string": fmt.Sprintf("// helper %d (edited)\n", round)}
		case 3:
			name, args = "shell_exec", map[string]any{"command": fmt.Sprintf("seq 1 2000; echo %d", round)}
		}
		raw, _ := json.Marshal(args)
		call := llm.ToolCall{ID: fmt.Sprintf("call_%d", round), Name: name, Arguments: string(raw)}
		_ = a.appendMessage(llm.Message{Role: llm.RoleAssistant, Content: "Next step.", ToolCalls: []llm.ToolCall{call}})
		res, err := tools.Call(ctx, set, name, string(raw))
		if err != nil {
			b.Fatal(err)
		}
		_ = a.appendMessage(toolMessage(call.ID, res.Content))
		_ = a.noteFiles(name, res.Files)
	}
	return a
}

// offlineAgent is an agent over the workspace dir with the coding tools
// and a client that is never called, in a run begun with the user message
// task: for building histories and requests without a model.
func offlineAgent(tb testing.TB, dir, task string) (*Agent, *tools.Set) {
	tb.Helper()
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		tb.Fatal(err)
	}
	set := tools.Coding(ws, tools.Options{})
	client := llmclient.New(llmclient.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "unused", Model: "m"})
	a, err := New(Options{Client: client, Tools: set, Workspace: ws, Model: "m"})
	if err != nil {
		tb.Fatal(err)
	}
	a.run = &runState{changed: map[string]bool{}}
	if err := a.appendMessage(userMessage(task)); err != nil {
		tb.Fatal(err)
	}
	return a, set
}

// BenchmarkRequestAssembly measures the request after a 200-message session
// with and without de-duplication and masking: its size (tokens/request,
// chars/4) and the time to assemble it (focused files re-read from disk).
func BenchmarkRequestAssembly(b *testing.B) {
	a := benchAgent(b)
	cases := []struct {
		name string
		opts viewOpts
	}{
		{name: "raw", opts: viewOpts{}},
		{name: "dedup", opts: viewOpts{dedup: true}},
		{name: "dedup+mask", opts: viewOpts{dedup: true, maskBefore: a.unitStart(len(a.hist.msgs) - a.opts.KeepMessages)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tokens := 0
			for b.Loop() {
				tokens = llm.EstimateTokens(a.buildRequestWith(c.opts).Messages)
			}
			b.ReportMetric(float64(tokens), "tokens/req")
			b.ReportMetric(float64(len(a.hist.msgs)), "messages")
		})
	}
}
