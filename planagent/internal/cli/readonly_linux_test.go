package cli

import (
	"testing"

	"golang.org/x/sys/unix"
)

// bindReadOnly mounts dir read-only over itself until the test ends, or
// skips the test where this root may not mount.
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("root here cannot bind-mount %s read-only (%v): run the test as another user", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("root here cannot remount %s read-only: %v", dir, err)
	}
}
