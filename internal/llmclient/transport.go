package llmclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// exchange records what the HTTP layer saw during one attempt. go-openai
// keeps response headers out of its errors, so Retry-After is taken here.
// Each attempt has its own exchange, carried in the request's context: one
// Client serves many goroutines and none sees another's headers.
type exchange struct {
	sent       bool // the request reached the HTTP client
	status     int  // HTTP status of the response, 0 without one
	retryAfter time.Duration
	patch      *bodyPatch // the profile's body rewrite (wirebody.go)
	// What go-openai does not read of a 200 answer (extras.go) is taken
	// from the body as it passes: a non-streamed body is copied (raw), a
	// stream is parsed line by line (lines), never held whole. The other
	// dialects' libraries read everything themselves (teeNone).
	tee   teeMode
	raw   bytes.Buffer
	lines lineExtras
	extra usageExtra // usage figures go-openai does not read (servercost.go)
	// idle bounds the silence between reads of the answer's body: a
	// server that sent its headers and then stalls is cut (cancel, cause
	// ErrIdle) after it, not after the whole request timeout.
	idle   time.Duration
	cancel context.CancelCauseFunc
}

type exchangeKey struct{}

// withExchange starts one attempt's record; the returned cancel must be
// called (with nil) when the attempt ends.
func withExchange(ctx context.Context, patch *bodyPatch, idle time.Duration) (context.Context, *exchange, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	rec := &exchange{patch: patch, idle: idle, cancel: cancel}
	return context.WithValue(ctx, exchangeKey{}, rec), rec, cancel
}

// recordingDoer is the go-openai HTTPDoer: the caller's http.Client plus the
// exchange bookkeeping.
type recordingDoer struct {
	hc  *http.Client
	now func() time.Time
}

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	rec, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if rec != nil {
		if err := rewriteBody(req, rec.patch); err != nil {
			return nil, err
		}
	}
	resp, err := d.hc.Do(req)
	if rec != nil {
		rec.sent = true
		if err == nil {
			rec.status = resp.StatusCode
			if resp.StatusCode == http.StatusOK {
				switch rec.tee {
				case teeRaw:
					rec.raw.Reset()
					resp.Body = teeBody{ReadCloser: resp.Body, buf: &rec.raw}
				case teeLines:
					rec.lines = lineExtras{x: &extras{}}
					resp.Body = lineTee{ReadCloser: resp.Body, lines: &rec.lines}
				}
			}
		}
		if err == nil && resp.StatusCode >= 400 {
			rec.retryAfter = retryAfter(resp.Header, d.now())
		}
		if err == nil && resp.StatusCode < 300 {
			watchCost(resp, &rec.extra)
		}
		if err == nil && rec.idle > 0 && rec.cancel != nil {
			resp.Body = newIdleBody(resp.Body, rec.idle, rec.cancel)
		}
	}
	return resp, err
}

// idleBody cancels the attempt when no byte of the body arrives for idle:
// streaming and non-streaming answers alike (a non-streamed answer's body
// comes all at once once the model is done, so a silence after the
// headers is a stall, not thinking).
type idleBody struct {
	io.ReadCloser
	timer *time.Timer
	idle  time.Duration
}

func newIdleBody(rc io.ReadCloser, idle time.Duration, cancel context.CancelCauseFunc) *idleBody {
	return &idleBody{ReadCloser: rc, idle: idle, timer: time.AfterFunc(idle, func() { cancel(ErrIdle) })}
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil {
		b.timer.Stop()
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After in seconds or as
// an HTTP date; zero when absent, unreadable or already past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
