package cmdutil

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/codeagent/codeagent/internal/config"
)

// KeyFDEnv is config.APIKeyFDEnv, named here for the readers of this file.
const KeyFDEnv = config.APIKeyFDEnv

// readKeyFD reads the key from the descriptor named by KeyFDEnv, closes it
// and removes the variable, so children inherit neither. No variable: "".
func readKeyFD(getenv func(string) string) (string, error) {
	v := getenv(KeyFDEnv)
	if v == "" {
		return "", nil
	}
	_ = os.Unsetenv(KeyFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return "", fmt.Errorf("%s=%q: want the number of an inherited file descriptor (3 or more)", KeyFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "api-key")
	if f == nil {
		return "", fmt.Errorf("%s=%d: no such file descriptor", KeyFDEnv, fd)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("read the API key from file descriptor %d (%s): %w", fd, KeyFDEnv, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// withKey is getenv with OPENAI_API_KEY answered by key when key is set.
func withKey(getenv func(string) string, key string) func(string) string {
	if key == "" {
		return getenv
	}
	return func(name string) string {
		if name == config.APIKeyEnv {
			return key
		}
		return getenv(name)
	}
}
