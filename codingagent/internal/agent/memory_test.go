package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llmtest"
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
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
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

// TestMemoryMergesConcurrentUpdate: another task rewrites the memory file
// while this one distils; its facts must survive (the merge is redone on top),
// and a file that never stops changing still gets this task's memory after a
// bounded number of merges.
func TestMemoryMergesConcurrentUpdate(t *testing.T) {
	tests := []struct {
		name         string
		changesEvery bool // the other writer strikes at every memory request, not just the first
		wantRequests int
		wantFile     []string
	}{
		{name: "changed once", wantRequests: 2, wantFile: []string{"- Other task: run make test.", "- Mine."}},
		{name: "keeps changing", changesEvery: true, wantRequests: memoryMerges, wantFile: []string{"- Mine."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			memPath := filepath.Join(t.TempDir(), "memory.md")
			if err := os.WriteFile(memPath, []byte("- Old fact.\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			memReqs := 0
			e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
				if !isMemoryRequest(req) {
					return llmtest.Text("done")
				}
				memReqs++
				existing := req.Messages[1].Content
				if memReqs == 1 || tt.changesEvery {
					other := fmt.Sprintf("- Old fact.\n- Other task: run make test.\n- other write %d\n", memReqs)
					if err := os.WriteFile(memPath, []byte(other), 0o644); err != nil {
						t.Error(err)
					}
				}
				if strings.Contains(existing, "Other task: run make test.") {
					return llmtest.Text("- Old fact.\n- Other task: run make test.\n- Mine.")
				}
				return llmtest.Text("- Old fact.\n- Mine.")
			})
			res, err := e.agent(func(o *Options) { o.MemoryPath = memPath }).RunTask(t.Context(), Task{ID: "m"})
			if err != nil || res.Status != Completed {
				t.Fatalf("result = %+v, %v", res, err)
			}
			e.noRejections()
			if memReqs != tt.wantRequests {
				t.Errorf("%d memory requests, want %d", memReqs, tt.wantRequests)
			}
			b, _ := os.ReadFile(memPath)
			for _, want := range tt.wantFile {
				if !strings.Contains(string(b), want) {
					t.Errorf("memory file lacks %q:\n%s", want, b)
				}
			}
		})
	}
}

func TestMemoryFailureNeverFailsTask(t *testing.T) {
	sixFacts := "- one\n- two\n- three\n- four\n- five\n- six\n"
	tests := []struct {
		name  string
		base  string // the memory file before; "- keep me\n" when empty
		reply llmtest.Reply
	}{
		{name: "server error", reply: llmtest.Reply{Status: 500}},
		{name: "empty answer", reply: llmtest.Text("   ")},
		{name: "a refusal, no list", reply: llmtest.Text("I'm sorry, I can't help with that.")},
		{name: "most facts dropped", base: sixFacts, reply: llmtest.Text("- six\n- seven")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			memPath := filepath.Join(t.TempDir(), "memory.md")
			base := tt.base
			if base == "" {
				base = "- keep me\n"
			}
			if err := os.WriteFile(memPath, []byte(base), 0o644); err != nil {
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
			if b, _ := os.ReadFile(memPath); string(b) != base {
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

func TestCheckMemoryTakesTheList(t *testing.T) {
	tests := []struct {
		name, base, reply, want string
	}{
		{name: "plain list", reply: "- a\n- b", want: "- a\n- b"},
		{name: "fenced", reply: "```markdown\n- a\n  continued\n- b\n```", want: "- a\n  continued\n- b"},
		{name: "sentences around", reply: "Here is the updated memory:\n\n* a\n* b\n\nLet me know.", want: "* a\n* b"},
		{name: "half kept is enough", base: "- 1\n- 2\n- 3\n- 4", reply: "- 3\n- 4", want: "- 3\n- 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkMemory(tt.base, tt.reply)
			if err != nil || got != tt.want {
				t.Errorf("checkMemory = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
