package config

import (
	"fmt"
	"strings"
)

// Error is a configuration problem. Load may return several joined with
// errors.Join; callers detect them with errors.As to exit with status 2.
type Error struct {
	// Where locates the value: "codeagent.yaml:7", "env CODEAGENT_RETRIES",
	// "flag --model", "default", or "" when unknown.
	Where string
	// Key is the yaml key concerned, "" when the problem is the file itself
	// or a key that does not exist.
	Key string
	Msg string
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Where != "" {
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

type originKind int

const (
	fromDefault originKind = iota
	fromFile
	fromEnv
	fromFlag
	fromCatalog // the embedded model catalog; name is "<provider>/<model>"
)

// origin is where one value came from. The file origin keeps both the path
// as the user wrote it (for error messages, matching their command line) and
// the absolute path (for Sources, which must be unambiguous).
type origin struct {
	kind originKind
	name string // env var, "--flag", or the file path as given
	abs  string
	line int
}

func (o origin) source() Source {
	switch o.kind {
	case fromFile:
		return Source(fmt.Sprintf("file (%s:%d)", o.abs, o.line))
	case fromEnv:
		return Source("env " + o.name)
	case fromFlag:
		return Source("flag " + o.name)
	case fromCatalog:
		return Source("catalog: " + o.name)
	}
	return SourceDefault
}

func (o origin) where() string {
	switch o.kind {
	case fromFile:
		return fmt.Sprintf("%s:%d", o.name, o.line)
	case fromEnv:
		return "env " + o.name
	case fromFlag:
		return "flag " + o.name
	case fromCatalog:
		return "catalog " + o.name
	}
	return "default"
}
