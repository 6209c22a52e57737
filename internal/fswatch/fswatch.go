// Package fswatch opens fsnotify watchers for code that can do without
// them. When no inotify instance is left (the per-user limit,
// fs.inotify.max_user_instances, taken by other programs: "too many open
// files") or a directory cannot be watched, the caller polls instead, and
// the process says so in one warning line, however many watchers it opens.
package fswatch

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// Opener opens the watchers of one process. A nil *Opener opens them with
// fsnotify and logs nothing.
type Opener struct {
	// New makes a watcher; nil is fsnotify.NewWatcher (tests make it fail).
	New    func() (*fsnotify.Watcher, error)
	Logger *slog.Logger

	mu      sync.Mutex
	polling bool
}

// Watch returns a watcher of dirs, or nil when events are unavailable: the
// caller then polls. The first failure is logged, the later ones are not.
func (o *Opener) Watch(dirs ...string) *fsnotify.Watcher {
	newWatcher := fsnotify.NewWatcher
	if o != nil && o.New != nil {
		newWatcher = o.New
	}
	w, err := newWatcher()
	if err != nil {
		o.fail(err)
		return nil
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			w.Close()
			o.fail(fmt.Errorf("watch %s: %w", d, err))
			return nil
		}
	}
	return w
}

func (o *Opener) fail(err error) {
	if o == nil {
		return
	}
	o.mu.Lock()
	first := !o.polling
	o.polling = true
	o.mu.Unlock()
	if first && o.Logger != nil {
		o.Logger.Warn("file events unavailable, polling instead (raise fs.inotify.max_user_instances, or end programs holding inotify instances, to get them back)", "err", err)
	}
}

// Polling reports whether a watcher could not be opened: a child process
// is then told to poll as well, rather than find out and warn again.
func (o *Opener) Polling() bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.polling
}

// Events is w's event channel; nil (never ready) without a watcher.
func Events(w *fsnotify.Watcher) <-chan fsnotify.Event {
	if w == nil {
		return nil
	}
	return w.Events
}

// Errors is w's error channel; nil (never ready) without a watcher.
func Errors(w *fsnotify.Watcher) <-chan error {
	if w == nil {
		return nil
	}
	return w.Errors
}

// Close closes w, if there is one.
func Close(w *fsnotify.Watcher) {
	if w != nil {
		_ = w.Close()
	}
}
