package config

import (
	"strings"
	"testing"
)

// FuzzApplyFile checks that no file content panics the parser, that every
// problem is reported with the file name.
func FuzzApplyFile(f *testing.F) {
	for _, seed := range []string{
		"", "model: m\n", "- a\n", "a: [1\n", "model: &a x\nimage: *a\n", "<<: {model: x}\n",
		"retries: 1\nretries: 2\n", "---\n---\n", "? [a]\n: b\n", "context_window: 1e9\n",
		"api_key: [sk-secret-zzzz]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		st := &state{cfg: Defaults(), origins: make(map[string]origin)}
		st.applyFile([]byte(content), "f.yaml", "/abs/f.yaml")
		for _, err := range st.errs {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Errorf("error without location: %v", err)
			}
		}
	})
}
