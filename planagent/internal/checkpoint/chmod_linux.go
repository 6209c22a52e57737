package checkpoint

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// chmodDir adds read, write and search permission for its owner to the
// directory p, following no link: through a descriptor opened with
// O_PATH (which needs no permission on p itself), with fchmodat2 where
// the kernel has it (6.6), else through the descriptor's /proc link, as
// the C library does for fchmodat with AT_SYMLINK_NOFOLLOW.
func chmodDir(p string) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	mode := st.Mode&0o7777 | 0o700
	if err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH); err == nil {
		return nil
	}
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode)
}
