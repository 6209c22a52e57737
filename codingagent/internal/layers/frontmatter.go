package layers

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/codeagent/codeagent/internal/protocol"
)

// parseContextFile strips the front matter of a context file and reads its
// `enabled` flag (default true). Other front matter keys (title,
// description, ...) are documentation for people and are ignored.
func parseContextFile(data []byte) (body string, enabled bool, err error) {
	header, body, found, err := protocol.SplitFrontMatter(data)
	if err != nil {
		return "", false, err
	}
	if !found {
		return strings.TrimSpace(body), true, nil
	}
	var meta struct {
		Enabled *bool `yaml:"enabled"`
	}
	if err := yaml.Unmarshal(header, &meta); err != nil {
		return "", false, fmt.Errorf("front matter is not valid YAML: %w", err)
	}
	if meta.Enabled != nil && !*meta.Enabled {
		return "", false, nil
	}
	return strings.TrimSpace(body), true, nil
}
