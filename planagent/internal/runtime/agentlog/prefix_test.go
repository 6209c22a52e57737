package agentlog

import (
	"bytes"
	"testing"
)

func TestPrefixWriterWarningsOnly(t *testing.T) {
	var out bytes.Buffer
	w := NewPrefixWriter(&out, "[w] ")
	w.Keep = WarningsOnly
	_, _ = w.Write([]byte(`{"level":"INFO","msg":"task claimed"}` + "\n" + `{"level":"WARN","msg":"retaking"}` + "\npanic: boom\n" + `{"level":"ERR`))
	_, _ = w.Write([]byte(`OR","msg":"x"}` + "\n"))
	want := "[w] {\"level\":\"WARN\",\"msg\":\"retaking\"}\n[w] panic: boom\n[w] {\"level\":\"ERROR\",\"msg\":\"x\"}\n"
	if out.String() != want {
		t.Fatalf("got %q\nwant %q", out.String(), want)
	}
}
