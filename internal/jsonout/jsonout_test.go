package jsonout

import (
	"bytes"
	"strings"
	"testing"
)

func TestJSONNotHTMLEscaped(t *testing.T) {
	v := map[string]string{"goal": "a > b && c < d"}
	var buf bytes.Buffer
	if err := Write(&buf, v); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "{\n  \"goal\": \"a > b && c < d\"\n}\n"; got != want {
		t.Errorf("Write = %q, want %q", got, want)
	}
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"goal":"a > b && c < d"}`; got != want {
		t.Errorf("Marshal = %q, want %q", got, want)
	}
	if strings.Contains(buf.String()+string(b), `\u00`) {
		t.Errorf("HTML-escaped: %s %s", buf.String(), b)
	}
}
