package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// The fsnotify probe file is written by rename: a symbolic link the agent
// left under its name is replaced, not followed to a file of the host.
func TestProbeDoesNotFollowASymlink(t *testing.T) {
	l := newLayout(t)
	target := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(target, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(l.Commands(), ".probe-w-sym")); err != nil {
		t.Fatal(err)
	}
	startWatcher(t, Options{Layout: l, Runner: noopRunner{}, WatcherID: "w-sym"})
	eventually(t, "heartbeat", func() bool { return len(mustHeartbeats(t, l)) == 1 })
	if b, _ := os.ReadFile(target); string(b) != "# mine\n" {
		t.Errorf("the probe wrote through the link: %q", b)
	}
}
