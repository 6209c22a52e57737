// Package clip bounds text that goes into files and messages of a fixed
// size (reports, events lines, the agent's history): what is cut is said,
// never silently dropped.
package clip

import (
	"fmt"
	"unicode/utf8"
)

// String returns s when it is at most limit bytes, else its head cut at a
// character boundary and the note "[truncated: N bytes]" (N the bytes
// cut), all in at most limit bytes.
func String(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The note's length depends on N, which depends on where the cut is:
	// reserve room for the longest N s can need.
	room := len(note(len(s)))
	keep := max(limit-room, 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note(len(s)-keep)
}

func note(cut int) string { return fmt.Sprintf("\n[truncated: %d bytes]", cut) }
