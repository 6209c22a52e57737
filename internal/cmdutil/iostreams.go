package cmdutil

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the injected streams every command writes to, so tests read buffers.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// IsTerminal reports whether stdin is a terminal (interactive confirmation).
	IsTerminal func() bool
	// OutIsTerminal reports whether stdout is a terminal (colour, a
	// pager); nil is never.
	OutIsTerminal func() bool
}

// System returns the process's streams.
func System() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		IsTerminal:    func() bool { return IsTerminal(os.Stdin) },
		OutIsTerminal: func() bool { return IsTerminal(os.Stdout) }}
}

// IsTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one, and `run … </dev/null` must not ask.
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}
