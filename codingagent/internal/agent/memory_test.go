package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

const distilled = "- Indent with tabs (gofmt).\n- Errors are wrapped with %w because callers use errors.Is."

func TestMemoryCarriesToNextTask(t *testing.T) {
	e := newEnv(t)
	memPath := filepath.Join(t.TempDir(), "context", "memory.md")
	if err := os.MkdirAll(filepath.Dir(memPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memPath, []byte("- Tests live next to the code.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.srv.Handle(func(req openai.ChatCompletionRequest) llmtest.Reply {
		if isMemoryRequest(req) {
			if !strings.Contains(req.Messages[1].Content, "Tests live next to the code") ||
				!strings.Contains(req.Messages[1].Content, "we wrap errors with %w") {
				return llmtest.Text("- memory request lacked the old memory or the transcript")
			}
			return llmtest.Text("- Tests live next to the code.\n" + distilled)
		}
		return llmtest.Text("Done; we wrap errors with %w so errors.Is works.")
	})
	first := e.agent(func(o *Options) { o.MemoryPath = memPath })
	res, err := first.RunTask(t.Context(), Task{ID: "one"})
	if err != nil {
		t.Fatal(err)
	}
	e.noRejections()
	if res.Status != Completed {
		t.Fatalf("result = %+v", res)
	}
	b, err := os.ReadFile(memPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), distilled) {
		t.Fatalf("memory file = %q", b)
	}
	if len(e.srv.Requests()) != 2 || res.Usage.Prompt <= 0 {
		t.Errorf("%d requests, usage %+v; want the task call and the memory call counted", len(e.srv.Requests()), res.Usage)
	}

	second := e.agent(func(o *Options) { o.MemoryPath = memPath })
	if _, err := second.RunTask(t.Context(), Task{ID: "two"}); err != nil {
		t.Fatal(err)
	}
	next := e.srv.Requests()[2]
	if !strings.Contains(system(next), "Indent with tabs (gofmt).") {
		t.Errorf("the next task's system prompt lacks the memory:\n%s", system(next))
	}
}

func TestMemoryFailureNeverFailsTask(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
	}{
		{name: "server error", reply: llmtest.Reply{Status: 500}},
		{name: "empty answer", reply: llmtest.Text("   ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			memPath := filepath.Join(t.TempDir(), "memory.md")
			if err := os.WriteFile(memPath, []byte("- keep me\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.srv.Enqueue(llmtest.Text("done"), tt.reply)
			res, err := e.agent(func(o *Options) { o.MemoryPath = memPath }).RunTask(t.Context(), Task{ID: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != Completed || res.Answer != "done" {
				t.Fatalf("result = %+v", res)
			}
			if b, _ := os.ReadFile(memPath); string(b) != "- keep me\n" {
				t.Errorf("memory file changed to %q", b)
			}
			logged := false
			for _, ev := range e.events.ofType(events.Log) {
				logged = logged || strings.Contains(ev.Text, "long-term memory not updated")
			}
			if !logged {
				t.Error("the failure was not reported as an event")
			}
		})
	}
}

func TestBoundMemoryKeepsNewest(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "fits", in: "- a\n- b", n: 100, want: "- a\n- b"},
		{name: "oldest lines dropped", in: "- old\n- mid\n- new", n: 11, want: "- mid\n- new"},
		{name: "one huge line", in: strings.Repeat("x", 50), n: 10, want: strings.Repeat("x", 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boundMemory(tt.in, tt.n); got != tt.want {
				t.Errorf("boundMemory = %q, want %q", got, tt.want)
			}
		})
	}
}
