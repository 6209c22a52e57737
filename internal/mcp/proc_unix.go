//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// stopWithParent puts a stdio server in its own process group, so the
// terminal's Ctrl-C (which the chat uses to cancel a turn) does not kill
// it; Manager.Close stops it.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
