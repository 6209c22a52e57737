package docker

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/codeagent/codeagent/planagent/internal/runtime/agentbin"
)

// platform is the host a codingagent is looked up for: containers run
// Linux on the host's architecture (Docker Desktop on macOS and Windows
// runs a Linux VM of the host's CPU), whatever the host's own OS.
type platform struct{ goos, goarch string }

func hostPlatform() platform { return platform{goruntime.GOOS, goruntime.GOARCH} }

// linuxDir is where `make build` puts the Linux codingagent for containers
// beside the host's binaries: bin/linux-arm64/codingagent on an Apple
// silicon Mac.
func (p platform) linuxDir() string { return "linux-" + p.goarch }

// crossBuild is the command that builds the codingagent containers need.
func (p platform) crossBuild() string {
	return fmt.Sprintf("`make build` (or `CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -o bin/%s/codingagent ./codingagent`)",
		p.goarch, p.linuxDir())
}

// findContainerCodingAgent finds the codingagent to bring into containers:
// a Linux build, looked up first in linux-<arch>/ next to executable. On a
// Linux host the host's own codingagent is one too (agentbin.Find); on
// any other host it is not, and the error names the cross-build.
func findContainerCodingAgent(executable string, p platform) (string, error) {
	if executable != "" {
		c := filepath.Join(filepath.Dir(executable), p.linuxDir(), "codingagent")
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return c, nil
		}
	}
	if p.goos == "linux" {
		return agentbin.Find(executable)
	}
	where := "next to planagent"
	if executable != "" {
		where = "in " + filepath.Join(filepath.Dir(executable), p.linuxDir())
	}
	return "", fmt.Errorf("%w for linux/%s %s: containers run Linux, and the %s codingagent beside planagent cannot run there; build it with %s",
		agentbin.ErrNotFound, p.goarch, where, p.goos, p.crossBuild())
}
