//go:build !linux

package checkpoint

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// chmodDir adds read, write and search permission for its owner to the
// directory p, following no link: fchmodat with AT_SYMLINK_NOFOLLOW,
// which the BSDs and macOS carry out on a link itself.
func chmodDir(p string) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", p)
	}
	return unix.Fchmodat(unix.AT_FDCWD, p, uint32(st.Mode&0o7777|0o700), unix.AT_SYMLINK_NOFOLLOW)
}
