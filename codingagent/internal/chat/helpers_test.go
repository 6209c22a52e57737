package chat

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/codingagent/internal/agent"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/tools"
)

// env is one test's workspace, sessions dir, strict model server and real client.
type env struct {
	t        *testing.T
	srv      *llmtest.Server
	client   *llmclient.Client
	ws       *tools.Workspace
	sessions string
	events   *recorder
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := llmtest.New(t)
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	client := llmclient.New(llmclient.Config{BaseURL: srv.URL, APIKey: "test-key", Model: "test-model", MaxRetries: 0,
		BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	return &env{t: t, srv: srv, client: client, ws: ws, sessions: t.TempDir(), events: &recorder{}}
}

// run runs a chat session over the scripted input and returns its output.
func (e *env) run(id, input string, mod func(*Options)) string {
	e.t.Helper()
	var out syncBuffer
	opts := Options{
		Agent: agent.Options{
			Client:    e.client,
			Tools:     tools.Coding(e.ws, tools.Options{ShellTimeout: time.Minute}),
			Workspace: e.ws,
			Model:     "test-model",
			Stream:    true,
		},
		SessionsDir: e.sessions,
		SessionID:   id,
		In:          strings.NewReader(input),
		Out:         &out,
		Events:      e.events,
	}
	if mod != nil {
		mod(&opts)
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, opts); err != nil {
		e.t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	return out.String()
}

func (e *env) noRejections() {
	e.t.Helper()
	if r := e.srv.Rejections(); len(r) > 0 {
		e.t.Fatalf("server rejected requests:\n%s", strings.Join(r, "\n"))
	}
}

func (e *env) state(id string) State {
	e.t.Helper()
	s, err := loadState(statePath(e.sessions, id))
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) file(rel string) (string, bool) {
	b, err := os.ReadFile(e.ws.Root() + "/" + rel)
	return string(b), err == nil
}

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

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Type != events.Token && e.Type != events.Log {
			out = append(out, string(e.Type))
		}
	}
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func toolNames(req llmtest.Request) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

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

// lastUser is the content of the request's last user message.
func lastUser(req llmtest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}
