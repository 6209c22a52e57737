package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// headTail keeps the first and last parts of a stream within a fixed
// budget: a failing build's first error and its final summary are both
// worth more to the model than the middle.
type headTail struct {
	cap   int
	head  []byte
	tail  []byte // ring buffer once full
	start int    // index of the oldest byte in tail
	total int
}

func newHeadTail(cap int) *headTail {
	return &headTail{cap: cap}
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += n
	headCap := h.cap / 2
	if room := headCap - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	tailCap := h.cap - headCap
	for len(p) > 0 && tailCap > 0 {
		if len(h.tail) < tailCap {
			k := min(tailCap-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		if len(p) >= tailCap {
			copy(h.tail, p[len(p)-tailCap:])
			h.start = 0
			break
		}
		k := copy(h.tail[h.start:], p)
		p = p[k:]
		h.start = (h.start + k) % tailCap
	}
	return n, nil
}

// String returns the kept output with a marker where bytes were dropped.
func (h *headTail) String() string {
	tail := append(append([]byte{}, h.tail[h.start:]...), h.tail[:h.start]...)
	omitted := h.total - len(h.head) - len(tail)
	if omitted <= 0 {
		return strings.ToValidUTF8(string(h.head)+string(tail), "\uFFFD")
	}
	head := string(h.head)
	// Cuts may split a character; drop the partial bytes at the seams.
	for len(head) > 0 {
		if r, size := utf8.DecodeLastRuneInString(head); r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
	}
	t := string(tail)
	for len(t) > 0 {
		if r, size := utf8.DecodeRuneInString(t); r != utf8.RuneError || size != 1 {
			break
		}
		t = t[1:]
	}
	return fmt.Sprintf("%s\n[... %d chars omitted ...]\n%s", head, omitted, t)
}

// CapOutput keeps the first and last parts of s within n characters (30000
// when n <= 0), as shell_exec does, for tools defined elsewhere (MCP
// servers' results).
func CapOutput(s string, n int) string {
	if n <= 0 {
		n = defaultOutputCap
	}
	h := newHeadTail(n)
	_, _ = h.Write([]byte(s))
	return h.String()
}
