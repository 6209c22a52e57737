package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// ResolveWorkspace is the directory a command works in: its workspace
// (attempts/<run>/<task>.<n>, the attempt's own copy) under the volumes
// root, or the layout's workspace when the command names none. The path is
// resolved with its symbolic links and must stay under the volumes'
// attempts dir: a link planted in the volumes cannot send the agent
// elsewhere.
func ResolveWorkspace(l volume.Layout, rel string) (string, error) {
	if rel == "" {
		return l.Workspace(), nil
	}
	if err := protocol.ValidateWorkspace(rel); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	base, err := filepath.EvalSymlinks(l.Attempts())
	if err != nil {
		return "", fmt.Errorf("workspace %s: the volumes have no attempts dir (%w): planagent makes each attempt's copy there", rel, err)
	}
	dir := filepath.Join(l.Root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w: planagent makes the attempt's copy before writing its command", rel, err)
	}
	if inside, err := filepath.Rel(base, real); err != nil || inside == "." || inside == ".." || strings.HasPrefix(inside, "../") {
		return "", fmt.Errorf("workspace %s resolves to %s, outside the volumes' attempts dir %s (a symbolic link?): refusing it", rel, real, base)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("workspace %s (%s) is not a directory", rel, real)
	}
	return real, nil
}
