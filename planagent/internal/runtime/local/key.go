package local

import (
	"fmt"
	"os"
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
