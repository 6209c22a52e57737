//go:build !unix

package protocol

import (
	"fmt"
	"os"
)

// openNoBlock checks the path before opening it: without O_NOFOLLOW and
// O_NONBLOCK there is a window between the check and the open.
func openNoBlock(path string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: %w (%s: refused)", path, ErrNotRegular, KindOf(fi.Mode()))
	}
	return os.OpenFile(path, flag, perm)
}
