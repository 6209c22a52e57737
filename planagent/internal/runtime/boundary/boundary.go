// Package boundary holds what the docker and kubernetes runtimes share of
// the start-of-run boundary probe: the verdict they record, the report
// `codingagent boundary` prints, and the canary that listens where an
// attempt must never connect. Each runtime runs the probe its own way
// (a container, a Job) and judges by its own rules.
package boundary

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// ErrBreached: the start-of-run probe reached something an attempt must
// not (the run stops, exit 2, unless egress is open).
var ErrBreached = errors.New("the attempts' boundary does not hold")

// Timeout bounds the whole probe: create, start, tries, remove.
const Timeout = 60 * time.Second

// Verdict is what the start-of-run probe found: Verified, or the checks
// that failed, one line each.
type Verdict struct {
	Verified bool
	Failed   []string
	// Note says why nothing was probed (a compose watcher's trusted mode).
	Note string
}

// String is the record's form: "verified", or "failed: …", or the note.
func (b Verdict) String() string {
	switch {
	case b.Verified:
		return "verified"
	case len(b.Failed) > 0:
		return "failed: " + strings.Join(b.Failed, "; ")
	}
	return b.Note
}

// Report is codingagent boundary's JSON line.
type Report struct {
	Checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Environ []string `json:"environ"`
}

// Canary listens where an attempt must never connect and counts who does.
type Canary struct {
	l    net.Listener
	hits atomic.Int32
}

// NewCanary listens on addr; nil when it cannot (the probe then goes
// without this canary).
func NewCanary(addr string) *Canary {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil
	}
	c := &Canary{l: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.hits.Add(1)
			conn.Close()
		}
	}()
	return c
}

// Addr is the address the canary listens on.
func (c *Canary) Addr() string { return c.l.Addr().String() }

// Touched reports whether anything connected to the canary.
func (c *Canary) Touched() bool { return c.hits.Load() > 0 }

// Close stops listening; a nil canary is closed already.
func (c *Canary) Close() {
	if c != nil {
		c.l.Close()
	}
}
