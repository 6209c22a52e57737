//go:build !linux

package cmdutil

// Harden has nothing to do where /proc does not expose the environment.
func Harden() {}
