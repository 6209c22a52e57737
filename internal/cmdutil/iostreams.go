package cmdutil

import (
	"io"
	"os"
)

// IOStreams are the injected streams every command writes to, so tests read buffers.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// IsTerminal reports whether stdin is a terminal (interactive confirmation).
	IsTerminal func() bool
}

// System returns the process's streams.
func System() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, IsTerminal: func() bool {
		fi, err := os.Stdin.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0
	}}
}
