package notify

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
)

// receiver is an httptest server that records what is POSTed to it.
type receiver struct {
	mu     sync.Mutex
	bodies []string
	hdrs   []http.Header
	srv    *httptest.Server
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.hdrs = append(r.hdrs, req.Header.Clone())
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() ([]string, []http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...), append([]http.Header(nil), r.hdrs...)
}

func TestEverySinkGetsTheEvent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events.jsonl")
	hook, push := newReceiver(t, 200), newReceiver(t, 200)
	t.Setenv("HOOK_TOKEN", "s3cret-token")
	var logs bytes.Buffer
	n := New(&config.Notify{
		Command: []string{"/bin/sh", "-c", "cat >> " + out + "; echo >> " + out},
		Webhook: hook.srv.URL, Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}"},
		Ntfy: push.srv.URL,
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	sink := Sink(t.Context(), events.Discard, n, "add a feature")
	sink.Emit(events.Event{Type: events.RunEnd, RunID: "run-1", Status: "completed", Data: map[string]any{"stop_reason": map[string]any{"reason": "completed"}}})
	n.Wait()

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(bytes.TrimSpace(b), &ev); err != nil || ev.Kind != "run_finished" || ev.RunID != "run-1" || ev.Goal != "add a feature" {
		t.Errorf("the command's stdin: %s (%v)", b, err)
	}
	if !strings.Contains(string(b), `"stop_reason":{"reason":"completed"}`) {
		t.Errorf("no stop reason in %s", b)
	}
	bodies, hdrs := hook.got()
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"event":"run_finished"`) || hdrs[0].Get("Authorization") != "Bearer s3cret-token" || hdrs[0].Get("Content-Type") != "application/json" {
		t.Errorf("webhook got %q %v", bodies, hdrs)
	}
	bodies, hdrs = push.got()
	if len(bodies) != 1 || !strings.Contains(bodies[0], "run run-1 completed: add a feature") || hdrs[0].Get("Title") != "CodeAgent: run_finished" {
		t.Errorf("ntfy got %q %v", bodies, hdrs)
	}
	if logs.Len() != 0 {
		t.Errorf("logged: %s", logs.String())
	}
}

// A failing sink is logged once, naming it and not the secret; a hanging
// one is cut at the timeout; neither blocks Send nor touches the others.
func TestFailingAndHangingSinks(t *testing.T) {
	bad := newReceiver(t, 500)
	t.Setenv("HOOK_TOKEN", "s3cret-token")
	var mu sync.Mutex
	var logs bytes.Buffer
	n := New(&config.Notify{
		Command: []string{"sleep", "60"},
		Webhook: bad.srv.URL, Headers: map[string]string{"X-Token": "${HOOK_TOKEN}"},
		Timeout: 300 * time.Millisecond,
	}, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	start := time.Now()
	for range 3 {
		n.Send(t.Context(), Event{Kind: "task_failed", RunID: "r", Text: "t failed"})
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send blocked for %v", d)
	}
	n.Wait()
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the hanging command was not cut at its timeout: %v", d)
	}
	mu.Lock()
	l := logs.String()
	mu.Unlock()
	if strings.Count(l, "sink=webhook") != 1 || strings.Count(l, "sink=command") != 1 || !strings.Contains(l, "HTTP 500") {
		t.Errorf("want one line per failing sink:\n%s", l)
	}
	if strings.Contains(l, "s3cret") {
		t.Errorf("the header's secret reached the log:\n%s", l)
	}
	if bodies, _ := bad.got(); len(bodies) != 3 {
		t.Errorf("the failing webhook was tried %d times, want every event", len(bodies))
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Only the events asked for are sent; a retry is not a failure.
func TestEventsFilterAndDecisions(t *testing.T) {
	hook := newReceiver(t, 200)
	n := New(&config.Notify{Webhook: hook.srv.URL, Events: []string{"task_failed"}}, nil)
	sink := Sink(t.Context(), events.Discard, n, "g")
	sink.Emit(events.Event{Type: events.Decision, RunID: "r", TaskID: "t1", Status: "retry"})
	sink.Emit(events.Event{Type: events.Decision, RunID: "r", TaskID: "t2", Status: "continue", Text: "retries exhausted"})
	sink.Emit(events.Event{Type: events.RunEnd, RunID: "r", Status: "failed"})
	n.Wait()
	bodies, _ := hook.got()
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"task":"t2"`) || !strings.Contains(bodies[0], `"event":"task_failed"`) {
		t.Errorf("webhook got %q, want only t2's failure", bodies)
	}
	if New(nil, nil) != nil || New(&config.Notify{}, nil) != nil {
		t.Error("a config without sinks makes a notifier")
	}
}
