package fswatch

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// inotifyExhausted fails as fsnotify does when the per-user instance limit
// is reached.
func inotifyExhausted() (*fsnotify.Watcher, error) {
	return nil, errors.New("couldn't initialize inotify: " + syscall.EMFILE.Error())
}

func TestExhaustedWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	o := &Opener{New: inotifyExhausted, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	dir := t.TempDir()
	for range 3 {
		if w := o.Watch(dir); w != nil {
			t.Fatal("a watcher although inotify is exhausted")
		}
	}
	if !o.Polling() {
		t.Error("Polling() is false after a failure")
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "polling instead") || !strings.Contains(lines[0], "too many open files") || !strings.Contains(lines[0], "max_user_instances") {
		t.Errorf("want one warning naming the cause and the fix, got:\n%s", logs.String())
	}
	if Events(nil) != nil || Errors(nil) != nil {
		t.Error("a missing watcher's channels are not nil")
	}
	Close(nil)
}

func TestUnwatchableDirWarns(t *testing.T) {
	var logs bytes.Buffer
	o := &Opener{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if w := o.Watch(filepath.Join(t.TempDir(), "missing")); w != nil {
		t.Fatal("a watcher of a missing directory")
	}
	if !o.Polling() || !strings.Contains(logs.String(), "missing") {
		t.Errorf("polling %v, log:\n%s", o.Polling(), logs.String())
	}
}

func TestWatchDelivers(t *testing.T) {
	var o *Opener // the zero value: fsnotify, no log
	dir := t.TempDir()
	w := o.Watch(dir)
	if w == nil {
		t.Fatal("no watcher")
	}
	defer Close(w)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-Events(w):
		if filepath.Base(ev.Name) != "f" {
			t.Errorf("event for %s", ev.Name)
		}
	case <-time.After(time.Minute):
		t.Fatal("no event within a minute")
	}
	if o.Polling() {
		t.Error("a nil opener polls")
	}
}
