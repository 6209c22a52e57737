package tools

import (
	"errors"
	"fmt"
)

// ErrOutsideWorkspace is matched (errors.Is) by Resolve's refusals.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// outsideError names the refused path and the root so the model sees
// where it may work.
type outsideError struct {
	path, root string
}

func (e *outsideError) Error() string {
	return fmt.Sprintf("path %q is outside the workspace %s", e.path, e.root)
}

func (e *outsideError) Is(target error) bool { return target == ErrOutsideWorkspace }
