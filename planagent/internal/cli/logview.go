package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// logView is where every log line of a run goes on its way to the
// terminal: planagent's own slog text lines and the coding agent's (JSON in
// the container and from a local watcher, optionally after a
// "[codingagent] " prefix). It writes them in one format (slog text, the
// agent's marked from=codingagent) and collapses a run of lines that differ
// only in numbers and times (five "connection refused; retry N of 4 in
// Xms") into the first one and a count.
type logView struct {
	mu      sync.Mutex
	out     io.Writer
	buf     []byte
	last    string // the normalised form of the last line written
	repeats int
}

func newLogView(out io.Writer) *logView {
	return &logView{out: out}
}

func (v *logView) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.buf = append(v.buf, p...)
	for {
		i := bytes.IndexByte(v.buf, '\n')
		if i < 0 {
			break
		}
		line := string(v.buf[:i])
		v.buf = v.buf[i+1:]
		v.line(line)
	}
	return len(p), nil
}

// Flush writes a pending count of repeats and a partial last line.
func (v *logView) Flush() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.buf) > 0 {
		v.line(string(v.buf))
		v.buf = nil
	}
	v.flushRepeats()
}

var (
	timeAttr = regexp.MustCompile(`time=\S+ ?`)
	numbers  = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
)

func (v *logView) line(line string) {
	line = strings.TrimSuffix(line, "\r")
	rendered := line
	if rest, ok := strings.CutPrefix(line, "[codingagent] "); ok {
		rendered = rest
	}
	if r, ok := v.fromJSON(rendered); ok {
		rendered = r
	} else if rendered != line {
		rendered = "[codingagent] " + rendered
	}
	key := numbers.ReplaceAllString(timeAttr.ReplaceAllString(rendered, ""), "#")
	if key == v.last && strings.TrimSpace(key) != "" {
		v.repeats++
		return
	}
	v.flushRepeats()
	v.last = key
	_, _ = io.WriteString(v.out, rendered+"\n")
}

func (v *logView) flushRepeats() {
	if v.repeats == 0 {
		return
	}
	n := v.repeats
	v.repeats, v.last = 0, ""
	word := "times"
	if n == 1 {
		word = "time"
	}
	_, _ = fmt.Fprintf(v.out, "  … the line above %d more %s (numbers differ)\n", n, word)
}

// fromJSON renders a slog JSON line as slog text, or says it is not one.
func (v *logView) fromJSON(line string) (string, bool) {
	if !strings.HasPrefix(line, "{") {
		return "", false
	}
	var rec map[string]any
	if json.Unmarshal([]byte(line), &rec) != nil {
		return "", false
	}
	msg, _ := rec["msg"].(string)
	lvl, _ := rec["level"].(string)
	if lvl == "" {
		return "", false
	}
	var level slog.Level
	if level.UnmarshalText([]byte(lvl)) != nil {
		return "", false
	}
	when := time.Now()
	if s, ok := rec["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			when = t
		}
	}
	r := slog.NewRecord(when, level, msg, 0)
	r.AddAttrs(slog.String("from", "codingagent"))
	keys := make([]string, 0, len(rec))
	for k := range rec {
		if k != "time" && k != "level" && k != "msg" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.AddAttrs(slog.Any(k, rec[k]))
	}
	var b bytes.Buffer
	if err := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}).Handle(context.Background(), r); err != nil {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}
