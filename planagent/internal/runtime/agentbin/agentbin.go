// Package agentbin finds the codingagent executable planagent runs or
// mounts: next to planagent's own executable, then on PATH. The local
// runtime runs it; the container runtimes mount it, so it is shared.
package agentbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrNotFound means the codingagent binary was not found.
var ErrNotFound = errors.New("codingagent binary not found")

// Find looks next to executable, then on PATH.
func Find(executable string) (string, error) {
	if executable != "" {
		p := filepath.Join(filepath.Dir(executable), "codingagent")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("codingagent")
	if err != nil {
		return "", fmt.Errorf("%w next to %s nor on PATH: run `make build` (binaries in bin/) or put codingagent on PATH", ErrNotFound, executable)
	}
	return p, nil
}
