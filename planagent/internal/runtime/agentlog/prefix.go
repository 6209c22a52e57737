// Package agentlog puts a codingagent's output into planagent's log: whole
// lines, each with a prefix, and by default only its warnings and errors.
// Every runtime uses it (the local watcher's pipe, a container's or a
// pod's log stream), so it links none of their clients.
package agentlog

import (
	"bytes"
	"encoding/json"
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
	// Keep, when set, decides which lines are written.
	Keep func(line []byte) bool
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
		raw := p.buf[:i+1]
		p.buf = p.buf[i+1:]
		if p.Keep != nil && !p.Keep(raw) {
			continue
		}
		line := append(append([]byte{}, p.prefix...), raw...)
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

// WarningsOnly keeps the watcher's JSON log lines of level WARN and ERROR
// (and anything that is not a JSON log line, such as a panic): planagent
// already shows each task's progress from its events file, so the watcher's
// INFO lines would say everything twice.
func WarningsOnly(line []byte) bool {
	var rec struct {
		Level string `json:"level"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Level == "" {
		return true
	}
	return rec.Level != "INFO" && rec.Level != "DEBUG"
}
