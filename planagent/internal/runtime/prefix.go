package runtime

import (
	"bytes"
	"io"
	"sync"
)

// PrefixWriter writes whole lines to w, each with a prefix, so the watcher's
// output reads as part of planagent's log.
type PrefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

// NewPrefixWriter returns a line-prefixing writer on w.
func NewPrefixWriter(w io.Writer, prefix string) *PrefixWriter {
	return &PrefixWriter{w: w, prefix: []byte(prefix)}
}

// Write buffers p and writes every complete line.
func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte{}, p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}

// Flush writes a trailing partial line.
func (p *PrefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		_, _ = p.w.Write(append(append(append([]byte{}, p.prefix...), p.buf...), '\n'))
		p.buf = nil
	}
}
