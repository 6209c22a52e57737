//go:build !linux

package cli

import "testing"

// bindReadOnly: root's read-only directory is a Linux bind mount here.
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	t.Skipf("a read-only %s for root needs a Linux bind mount: run the test as another user", dir)
}
