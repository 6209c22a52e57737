package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// ParseError is a command or report file that breaks the contract.
type ParseError struct {
	File    string // the file name as given to Parse*/Read* (may be empty)
	Line    int    // 1-based line in the file, 0 when not tied to a line
	Field   string // e.g. "attempt", "dependencies[1].id"; empty for framing problems
	Problem string // what is wrong and, where it helps, what to write instead
}

// Error reads like a compiler message:
// `commands/t1.md:4: field "attempt": must be >= 1`.
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Problem)
	return b.String()
}

// withFile stamps the file name on a *ParseError coming out of the decoders,
// which do not know it.
func withFile(name string, err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.File = name
	}
	return err
}
