//go:build !unix

package tools

import (
	"os"
	"os/exec"
)

// Without process groups only the shell itself can be killed.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func signalOf(*os.ProcessState) string { return "" }
