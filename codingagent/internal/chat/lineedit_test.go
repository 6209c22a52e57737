package chat

import (
	"io"
	"testing"

	"golang.org/x/term"
)

// chunks is a terminal that delivers its input in the given pieces, one
// per read, as a slow link or tmux may split an escape sequence.
type chunks struct{ parts [][]byte }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; len(c.parts[0]) == 0 {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// editLine types input into an x/term line editor reading through a
// keyReader, split into pieces of size bytes (0: all at once).
func editLine(t *testing.T, input string, size int) string {
	t.Helper()
	var parts [][]byte
	for b := []byte(input); len(b) > 0; {
		n := len(b)
		if size > 0 && size < n {
			n = size
		}
		parts, b = append(parts, b[:n]), b[n:]
	}
	tm := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{&keyReader{r: &chunks{parts: parts}}, io.Discard}, "> ")
	line, err := tm.ReadLine()
	if err != nil {
		t.Fatalf("ReadLine(%q): %v", input, err)
	}
	return line
}

// Home, End and Delete as tmux and screen send them (ESC[1~ ESC[4~), as
// xterm's application mode does (ESC O H, ESC O F), the rxvt forms (ESC[7~
// ESC[8~) and x/term's own (ESC[H ESC[F ESC[3~).
func TestHomeEndDeleteUnderTmuxAndScreen(t *testing.T) {
	const (
		home, end, del      = "\x1b[1~", "\x1b[4~", "\x1b[3~"
		appHome, appEnd     = "\x1bOH", "\x1bOF"
		rxvtHome, rxvtEnd   = "\x1b[7~", "\x1b[8~"
		xtermHome, xtermEnd = "\x1b[H", "\x1b[F"
		input, want         = "abc" + home + "X" + end + "Y" + appHome + "Z" + appEnd + "W" +
			rxvtHome + del + rxvtEnd + "V" + xtermHome + del + xtermEnd + "U\r", "abcYWVU"
	)
	for _, size := range []int{0, 1, 2, 3, 5} {
		if got := editLine(t, input, size); got != want {
			t.Errorf("read in pieces of %d bytes: line %q, want %q", size, got, want)
		}
	}
	// Sequences that start like one of these still reach x/term whole.
	if got := editLine(t, "ab\x1b[1;3Dx\r", 1); got != "xab" {
		t.Errorf("Alt-Left then x: line %q, want %q", got, "xab")
	}
}
