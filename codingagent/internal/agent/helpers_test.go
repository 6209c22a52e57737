package agent

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/tools"
)

// env is one test's workspace, strict model server and real llm client.
type env struct {
	t      *testing.T
	srv    *llmtest.Server
	client *llmclient.Client
	dir    string // the workspace
	ws     *tools.Workspace
	events *recorder
}

func newEnv(t *testing.T, srvOpts ...llmtest.Option) *env {
	t.Helper()
	srv := llmtest.New(t, srvOpts...)
	dir := t.TempDir()
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model",
		BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	return &env{t: t, srv: srv, client: client, dir: ws.Root(), ws: ws, events: &recorder{}}
}

// agent builds an agent on the env with the coding tools; mod adjusts options.
func (e *env) agent(mod func(*Options)) *Agent {
	e.t.Helper()
	opts := Options{
		Client:    e.client,
		Tools:     tools.Coding(e.ws, tools.Options{ShellTimeout: time.Minute}),
		Workspace: e.ws,
		Model:     "test-model",
		Events:    e.events,
	}
	if mod != nil {
		mod(&opts)
	}
	a, err := New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = a.Close() })
	return a
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// noRejections fails the test when the strict server refused anything.
func (e *env) noRejections() {
	e.t.Helper()
	if r := e.srv.Rejections(); len(r) > 0 {
		e.t.Fatalf("server rejected requests:\n%s", strings.Join(r, "\n"))
	}
}

// recorder is an events.Sink that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
	hook   func(events.Event)
}

func (r *recorder) Emit(e events.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(e)
	}
}

func (r *recorder) ofType(t events.Type) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// system is the system message of a request.
func system(req llmtest.Request) string {
	if len(req.Messages) == 0 || req.Messages[0].Role != llm.RoleSystem {
		return ""
	}
	return req.Messages[0].Content
}

// toolNames lists the tools a request offers.
func toolNames(req llmtest.Request) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// allText is every content of a request, for "does the model see X" checks.
func allText(req llmtest.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Content + "\n")
		for _, c := range m.ToolCalls {
			b.WriteString(c.Function.Arguments + "\n")
		}
	}
	return b.String()
}

// isMemoryRequest tells the memory distillation call apart.
func isMemoryRequest(req llmtest.Request) bool {
	return strings.HasPrefix(system(req), "You maintain the long-term memory")
}

// isSummaryRequest tells a compaction call apart.
func isSummaryRequest(req llmtest.Request) bool {
	return strings.HasPrefix(system(req), "You compact")
}
