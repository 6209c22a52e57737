//go:build !linux

package protocol

import "errors"

// exchange is Linux's renameat2 RENAME_EXCHANGE; elsewhere the callers
// fall back to a new file renamed into place.
func exchange(_, _ string) error { return errors.ErrUnsupported }
