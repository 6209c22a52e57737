package mcp

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel kill a stdio server when the agent dies
// without closing it (SIGKILL, OOM), so no server outlives its agent. Its
// own process group keeps the terminal's Ctrl-C, which the chat uses to
// cancel a turn, from killing it.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
