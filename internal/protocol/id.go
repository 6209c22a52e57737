package protocol

import (
	"fmt"
	"path/filepath"
	"strings"
)

// MaxIDLength is the longest id ValidateID accepts.
const MaxIDLength = 64

// ValidateID checks a task or run id. Ids become file and directory names
// (commands/<id>.md, context/task/<id>/), so only letters, digits, '-', '_'
// and '.' are allowed, 1 to MaxIDLength of them, and the first may not be
// '.': that rules out "." and "..", hidden names, and every path separator,
// so no id can address a path outside its directory.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("id is empty: use 1 to %d letters, digits, '-', '_' or '.'", MaxIDLength)
	case len(id) > MaxIDLength:
		return fmt.Errorf("id %q is %d characters long: the limit is %d", id, len(id), MaxIDLength)
	case id[0] == '.':
		return fmt.Errorf("id %q starts with '.': ids must start with a letter, digit, '-' or '_'", id)
	}
	for _, r := range id {
		if !idRune(r) {
			return fmt.Errorf("id %q contains %q: only letters, digits, '-', '_' and '.' are allowed", id, r)
		}
	}
	return nil
}

// idRune is deliberately ASCII only: non-ASCII letters look alike, normalise
// differently across filesystems, and are not needed for generated ids.
func idRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '-' || r == '_' || r == '.'
}

// IsTempName reports whether a file name (or path) in a watched directory is
// to be ignored: the temporary files of WriteFileAtomic and every other name
// starting with '.', such as the .claimed directory and editors' swap files.
func IsTempName(name string) bool {
	return strings.HasPrefix(filepath.Base(name), ".")
}

// idFromFileName returns the id a file name promises ("t1" for
// "commands/t1.md"), or ok=false when the name does not end in ".md"
// (a name given only for messages, such as "<stdin>").
func idFromFileName(name string) (id string, ok bool) {
	if name == "" {
		return "", false
	}
	stem, ok := strings.CutSuffix(filepath.Base(name), ".md")
	if !ok {
		return "", false
	}
	// An attempt's file ("t1@2.md") holds task t1's command or report.
	if id, _, valid := SplitStem(stem); valid {
		return id, true
	}
	return stem, true
}

// StemSep separates a task id from its attempt number in the name of an
// attempt's command and report files (Stem). Ids never hold it (ValidateID),
// so "t@2" can be neither a task's id nor another task's attempt.
const StemSep = "@"

// Stem is the name (without ".md") of the command, claim, report and events
// files of attempt n of task id, for a task with several attempts that may
// be in flight at once: "<id>@<n>". A task of one attempt keeps its id as
// the stem (n < 1 gives id), so the common case's files are unchanged.
func Stem(id string, n int) string {
	if n < 1 {
		return id
	}
	return fmt.Sprintf("%s%s%d", id, StemSep, n)
}

// SplitStem is the task id and attempt number a stem names (0 for a plain
// id); ok is false when stem is neither a valid id nor "<valid id>@<n>".
func SplitStem(stem string) (id string, n int, ok bool) {
	id, num, several := strings.Cut(stem, StemSep)
	if ValidateID(id) != nil {
		return "", 0, false
	}
	if !several {
		return id, 0, true
	}
	if num == "" || len(num) > 4 || num[0] == '0' {
		return "", 0, false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return "", 0, false
		}
		n = n*10 + int(r-'0')
	}
	return id, n, true
}

// ValidateStem checks the name of a command or report file without ".md":
// a task id, or an attempt's stem (Stem).
func ValidateStem(stem string) error {
	if _, _, ok := SplitStem(stem); ok {
		return nil
	}
	id, _, several := strings.Cut(stem, StemSep)
	if err := ValidateID(id); err != nil || !several {
		return err
	}
	return fmt.Errorf("file name %q: after %q comes the attempt number (1 to 9999, no leading zero)", stem, StemSep)
}
