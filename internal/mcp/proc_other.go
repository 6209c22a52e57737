//go:build !unix

package mcp

import "os/exec"

// stopWithParent has no portable equivalent; Manager.Close stops servers.
func stopWithParent(*exec.Cmd) {}
