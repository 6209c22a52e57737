// Package notify tells a person that a run needs them or ended: a command
// given the event's JSON on its stdin, a webhook POSTed the JSON, an
// ntfy-style URL POSTed a line of text. A sink that fails is logged once
// and never fails the run; each send is bounded by a timeout.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
)

// Event is what a sink is told. Kind is one of config.NotifyEvents.
type Event struct {
	Kind       string    `json:"event"`
	RunID      string    `json:"run_id"`
	Goal       string    `json:"goal,omitempty"`
	Status     string    `json:"status,omitempty"`
	StopReason any       `json:"stop_reason,omitempty"`
	Task       string    `json:"task,omitempty"`
	Text       string    `json:"text"`
	Time       time.Time `json:"time"`
}

// Notifier sends events to the sinks of a config.Notify. Send never
// blocks the caller; Wait waits for the sends in flight (each bounded by
// the timeout) before the program exits.
type Notifier struct {
	cfg    config.Notify
	logger *slog.Logger
	getenv func(string) string
	client *http.Client

	wg     sync.WaitGroup
	mu     sync.Mutex
	failed map[string]bool // sinks whose failure was logged
}

// New is a Notifier for cfg; nil when cfg is nil (nothing to send).
func New(cfg *config.Notify, logger *slog.Logger) *Notifier {
	if cfg == nil || (len(cfg.Command) == 0 && cfg.Webhook == "" && cfg.Ntfy == "") {
		return nil
	}
	c := *cfg
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	return &Notifier{cfg: c, logger: logger, getenv: os.Getenv, client: &http.Client{}, failed: map[string]bool{}}
}

func (n *Notifier) wants(kind string) bool {
	if len(n.cfg.Events) == 0 {
		return true
	}
	for _, e := range n.cfg.Events {
		if e == kind {
			return true
		}
	}
	return false
}

// Send tells every sink about ev, in the background. A nil Notifier sends nothing.
func (n *Notifier) Send(ctx context.Context, ev Event) {
	if n == nil || !n.wants(ev.Kind) {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return
	}
	// Not cancelled with the run: a Ctrl-C'd run's "interrupted" still goes out.
	ctx = context.WithoutCancel(ctx)
	send := func(name string, f func(context.Context) error) {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
			defer cancel()
			if err := f(ctx); err != nil {
				n.fail(name, err)
			}
		}()
	}
	if len(n.cfg.Command) > 0 {
		send("command", func(ctx context.Context) error { return n.command(ctx, body) })
	}
	if n.cfg.Webhook != "" {
		send("webhook", func(ctx context.Context) error {
			return n.post(ctx, n.cfg.Webhook, "application/json", body, n.headers())
		})
	}
	if n.cfg.Ntfy != "" {
		send("ntfy", func(ctx context.Context) error {
			return n.post(ctx, n.cfg.Ntfy, "text/plain; charset=utf-8", []byte(ev.Text),
				map[string]string{"Title": "CodeAgent: " + ev.Kind, "Tags": ev.Kind})
		})
	}
}

// Wait waits for the sends in flight.
func (n *Notifier) Wait() {
	if n != nil {
		n.wg.Wait()
	}
}

// fail logs a sink's failure, once per sink.
func (n *Notifier) fail(name string, err error) {
	n.mu.Lock()
	seen := n.failed[name]
	n.failed[name] = true
	n.mu.Unlock()
	if !seen && n.logger != nil {
		n.logger.Warn("notification not sent (the run goes on; later failures of this sink are not logged)", "sink", name, "err", err)
	}
}

func (n *Notifier) command(ctx context.Context, body []byte) error {
	c := exec.CommandContext(ctx, n.cfg.Command[0], n.cfg.Command[1:]...)
	c.Stdin = bytes.NewReader(body)
	var errb bytes.Buffer
	c.Stderr = &errb
	c.WaitDelay = time.Second // a child that keeps the pipes open does not hold us
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", n.cfg.Command[0], err, bytes.TrimSpace(errb.Bytes()))
	}
	return nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// headers are the webhook's headers with ${VAR} read from the environment
// now: the values (tokens) are never stored.
func (n *Notifier) headers() map[string]string {
	h := map[string]string{}
	for k, v := range n.cfg.Headers {
		h[k] = varRef.ReplaceAllStringFunc(v, func(m string) string { return n.getenv(m[2 : len(m)-1]) })
	}
	return h
}

func (n *Notifier) post(ctx context.Context, url, ctype string, body []byte, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "codeagent-planagent")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return err // names the URL, never a header
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("POST %s: HTTP %d", req.URL.Redacted(), resp.StatusCode)
	}
	return nil
}

// Sink passes every event to inner and turns the ones a person should hear
// about into notifications: a run that ended (run_end: run_finished, or
// paused at a budget), a task that failed for good (a decision other than
// retry).
func Sink(ctx context.Context, inner events.Sink, n *Notifier, goal string) events.Sink {
	if n == nil {
		return inner
	}
	return events.Func(func(e events.Event) {
		inner.Emit(e)
		switch e.Type {
		case events.RunEnd:
			kind := "run_finished"
			if e.Status == "paused" {
				kind = "paused"
			}
			var stop any
			if e.Data != nil {
				stop = e.Data["stop_reason"]
			}
			n.Send(ctx, Event{Kind: kind, RunID: e.RunID, Goal: goal, Status: e.Status, StopReason: stop,
				Text: fmt.Sprintf("run %s %s: %s", e.RunID, e.Status, goal)})
		case events.Decision:
			if e.Status == "retry" {
				return
			}
			n.Send(ctx, Event{Kind: "task_failed", RunID: e.RunID, Goal: goal, Task: e.TaskID, Status: e.Status,
				Text: fmt.Sprintf("task %s of run %s failed (%s): %s", e.TaskID, e.RunID, e.Status, e.Text)})
		}
	})
}
