package layers

import (
	"strings"
	"testing"
)

// FuzzParseContextFile: never panics; an enabled file's body is trimmed and,
// when the file had front matter, does not start with it.
func FuzzParseContextFile(f *testing.F) {
	for _, s := range []string{
		"", "plain markdown\n", disabled, "---\nenabled: true\n---\nbody\n",
		"---\ntitle: x\n---\n---\nbody with rule\n", "---\nno end\n", "\ufeff---\r\nenabled: no\r\n---\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body, enabled, err := parseContextFile(data)
		if err != nil || !enabled {
			if body != "" {
				t.Fatalf("disabled or failed file returned a body %q", body)
			}
			return
		}
		if body != strings.TrimSpace(body) {
			t.Fatalf("body %q is not trimmed", body)
		}
	})
}
