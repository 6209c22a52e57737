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
	return strings.CutSuffix(filepath.Base(name), ".md")
}
