//go:build unix

package protocol

import (
	"os"
	"syscall"
)

// openNoBlock opens without following a final symbolic link and without
// waiting for a FIFO's other end (O_NONBLOCK only affects FIFOs and devices
// here: reads of a regular file never block on it).
func openNoBlock(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, perm)
}
