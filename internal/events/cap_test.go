package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestJSONCapsFields: a 50 MB argument string becomes a line of bounded
// size that still says how much was cut.
func TestJSONCapsFields(t *testing.T) {
	var out bytes.Buffer
	huge := strings.Repeat("x", 50<<20)
	NewJSON(&out).Emit(Event{Type: ToolCall, Tool: "write_file", Args: huge, Text: huge})
	if out.Len() > 3*MaxField {
		t.Fatalf("a line of %d bytes", out.Len())
	}
	var e Event
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(e.Args, "[truncated: "+strconv.Itoa(len(huge)-strings.Index(e.Args, "\n"))+" bytes]") {
		t.Errorf("args end %q", e.Args[len(e.Args)-40:])
	}
}
