//go:build !linux

package cli

// hardenProcess has nothing to do where /proc does not expose the environment.
func hardenProcess() {}
