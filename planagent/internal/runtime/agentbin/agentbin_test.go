package agentbin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeExec(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, "codingagent")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// The binary next to planagent's executable wins over one on PATH; one
// that is not executable there is passed over for PATH's.
func TestFindNextToExecutableThenPath(t *testing.T) {
	next, onPath := t.TempDir(), t.TempDir()
	t.Setenv("PATH", onPath)
	pathBin := writeExec(t, onPath, 0o755)
	executable := filepath.Join(next, "planagent")

	want := writeExec(t, next, 0o755)
	if got, err := Find(executable); err != nil || got != want {
		t.Errorf("Find with one next to planagent = %q, %v; want %q", got, err, want)
	}
	if err := os.Chmod(want, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(executable); err != nil || got != pathBin {
		t.Errorf("Find with a non-executable one next to planagent = %q, %v; want PATH's %q", got, err, pathBin)
	}
}

// Found nowhere: ErrNotFound, and the message says how to get one.
func TestFindNowhere(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Find(filepath.Join(t.TempDir(), "planagent"))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("Find = %v, want ErrNotFound saying to run make build", err)
	}
}
