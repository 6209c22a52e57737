// Package output holds the writers and string helpers both container
// runtimes put a command's or an agent's output through: a tail that keeps
// the end of a long output, a capped file for the live events copy, a
// writer many containers can share, and the masking of the provider key.
package output

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Tail keeps the last Limit bytes written to it and counts the rest.
type Tail struct {
	Limit   int
	buf     []byte
	dropped int
}

func (b *Tail) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	// Trim in batches so a chatty command does not copy on every write.
	if len(b.buf) > 2*b.Limit {
		cut := len(b.buf) - b.Limit
		b.dropped += cut
		b.buf = append(b.buf[:0], b.buf[cut:]...)
	}
	return len(p), nil
}

// String is the kept end, after a line saying how much was cut.
func (b *Tail) String() string {
	s := string(b.buf)
	if len(b.buf) > b.Limit {
		cut := len(b.buf) - b.Limit
		return fmt.Sprintf("[... %d bytes of output cut ...]\n", b.dropped+cut) + s[cut:]
	}
	if b.dropped > 0 {
		return fmt.Sprintf("[... %d bytes of output cut ...]\n", b.dropped) + s
	}
	return s
}

// Redact masks every occurrence of secret in s; an empty secret masks
// nothing.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// LastLine is the last non-empty line of s, trimmed: where a probe prints
// its report after whatever else it wrote.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// LockedWriter serialises the log lines of concurrent containers.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// CappedFile creates Path on the first write and appends to it up to
// Limit bytes, whole lines only (a reader takes a partial last line for
// one to come); the rest is dropped. Write never fails: the stream it
// drains must go on.
type CappedFile struct {
	Path  string
	Limit int64

	mu      sync.Mutex
	f       *os.File
	written int64
	partial []byte
	failed  bool
}

func (c *CappedFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed || c.written >= c.Limit {
		return len(p), nil
	}
	if c.f == nil {
		f, err := os.OpenFile(c.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			c.failed = true
			return len(p), nil
		}
		c.f = f
	}
	c.partial = append(c.partial, p...)
	end := bytes.LastIndexByte(c.partial, '\n')
	if end < 0 {
		return len(p), nil
	}
	lines := c.partial[:end+1]
	if c.written+int64(len(lines)) > c.Limit {
		c.written = c.Limit // the next line would pass the cap: stop at a line's end
		c.partial = nil
		return len(p), nil
	}
	if _, err := c.f.Write(lines); err != nil {
		c.failed = true
	}
	c.written += int64(len(lines))
	c.partial = append(c.partial[:0], c.partial[end+1:]...)
	return len(p), nil
}

// Close closes the file, if a write created it.
func (c *CappedFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	return c.f.Close()
}

var _ io.WriteCloser = (*CappedFile)(nil)
