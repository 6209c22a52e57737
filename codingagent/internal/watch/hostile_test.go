package watch

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codeagent/codeagent/internal/protocol"
)

// A FIFO or a symbolic link in commands/ (the agent can make either from
// inside its container) gets a failed report at once, is never read
// through, and the watcher goes on with the next command.
func TestHostileCommandFilesAreRefused(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(secret, []byte("---\nid: s1\nrun_id: stolen\nattempt: 1\ntitle: root:x:0:0\n---\n\nroot:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		make func(path string) error
		want string
	}{
		{name: "fifo", id: "f1", make: func(p string) error { return syscall.Mkfifo(p, 0o644) }, want: "a FIFO"},
		{name: "symlink", id: "s1", make: func(p string) error { return os.Symlink(secret, p) }, want: "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			ran := make(chan string, 10)
			startWatcher(t, Options{Layout: l, Runner: noopRunner{ran: ran}})
			eventually(t, "heartbeat", func() bool { return len(mustHeartbeats(t, l)) == 1 })
			if err := tt.make(filepath.Join(l.Commands(), tt.id+".md")); err != nil {
				t.Fatal(err)
			}
			rep := waitReport(t, l, tt.id, 1)
			if rep.Status != protocol.StatusFailed || !strings.Contains(rep.Error, tt.want) || !strings.Contains(rep.Error, "not a regular file") {
				t.Errorf("report: %s %q, want failed naming %q", rep.Status, rep.Error, tt.want)
			}
			if rep.RunID == "stolen" || strings.Contains(rep.Error+rep.Body+rep.Summary, "root:x") {
				t.Errorf("the symlink's target was read: %+v", rep)
			}
			dropCommand(t, l, command("next", 1))
			if got := waitReport(t, l, "next", 1); got.Status != protocol.StatusCompleted {
				t.Errorf("the command after the hostile one: %s %s", got.Status, got.Error)
			}
			if got := <-ran; got != "next" {
				t.Errorf("runner ran %q, want only next", got)
			}
		})
	}
}
