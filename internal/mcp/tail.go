package mcp

import (
	"strings"
	"sync"
)

// tailBuffer keeps the last bytes a server wrote to stderr, for the line
// that says why it did not start or died.
type tailBuffer struct {
	mu  sync.Mutex
	cap int
	buf []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{cap: n} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.cap; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLines is the last n non-empty lines joined by " | ", cut to max
// characters from the end.
func (t *tailBuffer) lastLines(n, max int) string {
	t.mu.Lock()
	text := strings.ToValidUTF8(string(t.buf), "")
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " | ")
	if r := []rune(s); len(r) > max {
		s = "…" + string(r[len(r)-max:])
	}
	return s
}
