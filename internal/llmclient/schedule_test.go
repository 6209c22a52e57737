package llmclient_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmclient"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// fakeClock is the time a client's backoffs have spent: the client's
// sleeper advances it instead of sleeping, and the test server answers by
// it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Duration
	waits []time.Duration
}

func (f *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += d
	f.waits = append(f.waits, d)
	return ctx.Err()
}

func (f *fakeClock) elapsed() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// defaultClient is a client with the default retry schedule on clock.
func defaultClient(t *testing.T, s *llmtest.Server, clock *fakeClock) *llmclient.Client {
	t.Helper()
	c := llmclient.New(llmclient.Config{BaseURL: s.URL, APIKey: testKey, Model: "test-model", MaxRetries: llm.DefaultMaxRetries})
	llmclient.SetSleep(c, clock.sleep)
	return c
}

// TestRetryOutlastsATenSecondBlip: the provider answers 500 for the first
// ten seconds (of the fake clock); the default schedule outlasts it.
func TestRetryOutlastsATenSecondBlip(t *testing.T) {
	for range 20 { // the schedule is random: every draw must outlast it
		s := llmtest.New(t)
		clock := &fakeClock{}
		s.Handle(func(llmtest.Request) llmtest.Reply {
			if clock.elapsed() < 10*time.Second {
				return llmtest.Reply{Status: 500}
			}
			return llmtest.Text("back")
		})
		resp, err := defaultClient(t, s, clock).Chat(t.Context(), hello(), nil)
		if err != nil {
			t.Fatalf("a 10 s blip failed the call after %v of backoff (waits %v): %v", clock.elapsed(), clock.waits, err)
		}
		if resp.Message.Content != "back" {
			t.Fatalf("content %q", resp.Message.Content)
		}
	}
}

// TestRetryScheduleSpan checks the default schedule: exponential from 1 s,
// each wait in the upper half of its step, capped at 30 s, 30.5-61 s in
// all before the call gives up.
func TestRetryScheduleSpan(t *testing.T) {
	s := llmtest.New(t)
	s.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 503} })
	clock := &fakeClock{}
	_, err := defaultClient(t, s, clock).Chat(t.Context(), hello(), nil)
	if e := asError(t, err); e.Status != 503 {
		t.Fatalf("err = %v", err)
	}
	if got, want := len(s.Requests()), llm.DefaultMaxRetries+1; got != want {
		t.Fatalf("%d requests, want %d", got, want)
	}
	ceiling := time.Second
	for i, w := range clock.waits {
		if w < ceiling/2 || w > ceiling {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, w, ceiling/2, ceiling)
		}
		ceiling = min(2*ceiling, 30*time.Second)
	}
	if total := clock.elapsed(); total < 30*time.Second || total > 61*time.Second {
		t.Errorf("the retries spanned %v (waits %v), want 30.5-61 s", total, clock.waits)
	}
}

// TestRetryAfterOutranksTheSchedule: a server's Retry-After longer than the
// step is what the client waits.
func TestRetryAfterOutranksTheSchedule(t *testing.T) {
	s := llmtest.New(t)
	s.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "20"}, llmtest.Text("ok"))
	clock := &fakeClock{}
	if _, err := defaultClient(t, s, clock).Chat(t.Context(), hello(), nil); err != nil {
		t.Fatal(err)
	}
	if len(clock.waits) != 1 || clock.waits[0] != 20*time.Second {
		t.Errorf("waits %v, want the server's 20s", clock.waits)
	}
}

// TestStalledBodyIsRetried: a non-streamed answer whose body stalls after
// its headers is cut after the idle timeout and retried, long before the
// request timeout.
func TestStalledBodyIsRetried(t *testing.T) {
	t.Parallel() // waits out a timeout: overlapped with the other waiting tests
	s := llmtest.New(t)
	s.Enqueue(llmtest.Reply{StallBody: true}, llmtest.Text("complete"))
	var why []string
	c := newClient(t, s, func(cfg *llmclient.Config) {
		cfg.IdleTimeout = 300 * time.Millisecond
		cfg.RequestTimeout = 10 * time.Minute
		cfg.OnRetry = func(_ int, _ time.Duration, err error) { why = append(why, err.Error()) }
	})
	start := time.Now()
	resp, err := c.Chat(t.Context(), hello(), nil) // not streamed
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "complete" || len(s.Requests()) != 2 {
		t.Errorf("content %q after %d requests", resp.Message.Content, len(s.Requests()))
	}
	if len(why) != 1 || !strings.Contains(why[0], "no data from the server for 300ms") {
		t.Errorf("retried for %q, want the idle timeout", why)
	}
	// The request timeout is ten minutes; a minute is a wide margin on a
	// loaded machine for a 300 ms idle cut.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v: the stall waited for the request timeout", d)
	}
}
