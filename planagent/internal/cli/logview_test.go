package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLogViewOneFormatRepeatsCollapsed(t *testing.T) {
	var out bytes.Buffer
	v := newLogView(&out)
	own := slog.New(slog.NewTextHandler(v, nil))
	own.Warn("planagent's own line", "task", "a")
	// The watcher's JSON lines, from a container (bare) and a local watcher (prefixed).
	v.Write([]byte(`{"time":"2026-11-23T01:00:00.5Z","level":"WARN","msg":"task failed","task":"b","err":"boom"}` + "\n"))
	v.Write([]byte(`[codingagent] {"time":"2026-11-23T01:00:01Z","level":"ERROR","msg":"report not written","task":"c"}` + "\n"))
	v.Write([]byte("[codingagent] panic: not json\n"))
	// Five near-identical retries: one line and a count.
	for i := 1; i <= 5; i++ {
		own.Warn("model request failed (dial tcp 172.17.0.1:8080: connect: connection refused); retry " + string(rune('0'+i)) + " of 4 in 200ms")
	}
	own.Info("next")
	for i := 0; i < 3; i++ {
		v.Write([]byte(`{"time":"2026-11-23T01:00:02Z","level":"WARN","msg":"same again"}` + "\n"))
	}
	v.Flush()
	got := out.String()
	for _, want := range []string{
		`level=WARN msg="planagent's own line" task=a`,
		`time=2026-11-23T01:00:00.500Z level=WARN msg="task failed" from=codingagent err=boom task=b`,
		`level=ERROR msg="report not written" from=codingagent task=c`,
		"[codingagent] panic: not json",
		"  … the line above 4 more times (numbers differ)\n" + "time=",
		`msg="same again" from=codingagent` + "\n  … the line above 2 more times (numbers differ)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `{"`) {
		t.Errorf("a raw JSON line got through:\n%s", got)
	}
	if n := strings.Count(got, "connection refused"); n != 1 {
		t.Errorf("the refused connection is printed %d times:\n%s", n, got)
	}
}
