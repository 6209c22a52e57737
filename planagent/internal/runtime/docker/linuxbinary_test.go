package docker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/runtime/agentbin"
)

// binDir is a bin/ as `make build` leaves it: planagent and the host's
// codingagent, plus the Linux codingagent for containers when linuxToo.
func binDir(t *testing.T, arch string, linuxToo bool) (planagent, host, linux string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no codingagent on PATH to fall back on
	planagent, host = filepath.Join(dir, "planagent"), filepath.Join(dir, "codingagent")
	linux = filepath.Join(dir, "linux-"+arch, "codingagent")
	for _, p := range []string{planagent, host} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if linuxToo {
		if err := os.MkdirAll(filepath.Dir(linux), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(linux, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return planagent, host, linux
}

func TestContainerCodingAgentIsALinuxBuild(t *testing.T) {
	darwin, linux := platform{"darwin", "arm64"}, platform{"linux", "amd64"}
	t.Run("macOS with the cross-build", func(t *testing.T) {
		exe, _, want := binDir(t, "arm64", true)
		if got, err := findContainerCodingAgent(exe, darwin); err != nil || got != want {
			t.Errorf("got %q, %v; want %s", got, err, want)
		}
	})
	t.Run("macOS with the host build only", func(t *testing.T) {
		exe, _, _ := binDir(t, "arm64", false)
		got, err := findContainerCodingAgent(exe, darwin)
		if !errors.Is(err, agentbin.ErrNotFound) {
			t.Fatalf("got %q, %v; want agentbin.ErrNotFound: the darwin build cannot run in a container", got, err)
		}
		for _, want := range []string{"linux/arm64", "make build", "CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o bin/linux-arm64/codingagent ./codingagent"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	})
	t.Run("linux uses the host build", func(t *testing.T) {
		exe, want, _ := binDir(t, "amd64", false)
		if got, err := findContainerCodingAgent(exe, linux); err != nil || got != want {
			t.Errorf("got %q, %v; want %s", got, err, want)
		}
	})
	t.Run("linux prefers the linux build", func(t *testing.T) {
		exe, _, want := binDir(t, "amd64", true)
		if got, err := findContainerCodingAgent(exe, linux); err != nil || got != want {
			t.Errorf("got %q, %v; want %s", got, err, want)
		}
	})
}

func TestCheckStaticNamesTheCrossBuild(t *testing.T) {
	_, host, _ := binDir(t, "arm64", false) // a script: not an ELF file, as a Mach-O build is not
	err := checkStatic(host, platform{"darwin", "arm64"})
	if !errors.Is(err, agentbin.ErrNotFound) || !strings.Contains(err.Error(), "GOOS=linux GOARCH=arm64") ||
		!strings.Contains(err.Error(), "not a Linux executable") {
		t.Errorf("checkStatic of a non-Linux binary: %v", err)
	}
}
