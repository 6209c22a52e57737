package runtime

import (
	"fmt"
	"os"
	"strings"

	"github.com/codeagent/codeagent/internal/config"
)

// keyPipe returns the read end of a pipe holding key, already closed for
// writing, for the child to inherit; nil for an empty key. A key is far
// below the pipe's buffer, so the write cannot block.
func keyPipe(key string) (*os.File, error) {
	if key == "" {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe for the API key: %w", err)
	}
	_, err = w.WriteString(key)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("pass the API key on a pipe: %w", err)
	}
	return r, nil
}

// withoutKey drops the API key (and a stale descriptor number) from env:
// neither the watcher nor an acceptance command gets it in its environment.
func withoutKey(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !config.IsKeyEnv(name) && name != config.APIKeyFDEnv {
			out = append(out, kv)
		}
	}
	return out
}
