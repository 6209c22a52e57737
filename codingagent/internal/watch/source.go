package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/codeagent/codeagent/internal/protocol"
)

// nameKind sorts a directory entry of commands/.
type nameKind int

const (
	nameIgnored nameKind = iota
	nameCommand          // "<id>.md" with a valid id, or an attempt's "<id>@<n>.md" (protocol.Stem)
	nameInvalid          // "<something>.md" whose stem is not a valid id
)

// classify decides what a file name in commands/ is. Hidden names (the
// .claimed dir, probes) and temp names of atomic writers are never commands.
func classify(name string) (string, nameKind) {
	if name == "" || strings.HasPrefix(name, ".") || protocol.IsTempName(name) {
		return "", nameIgnored
	}
	id, ok := strings.CutSuffix(name, ".md")
	if !ok {
		return "", nameIgnored
	}
	if protocol.ValidateStem(id) != nil {
		return "", nameInvalid
	}
	return id, nameCommand
}

// scan lists commands/ and returns the command ids and the invalid names.
func scan(dir string) (ids, invalid []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("scan commands dir %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch id, kind := classify(e.Name()); kind {
		case nameCommand:
			ids = append(ids, id)
		case nameInvalid:
			invalid = append(invalid, e.Name())
		}
	}
	return ids, invalid, nil
}

// isArrival reports whether op can mean a command file appeared or changed:
// a rename into the dir is a Create, a file written in place ends with Writes.
func isArrival(op fsnotify.Op) bool {
	return op.Has(fsnotify.Create) || op.Has(fsnotify.Write)
}

// probeEvents writes a probe file into dir and waits up to timeout for
// fsw to report it. false means events are not delivered here (some bind
// mounts, network filesystems) and the caller should poll. Other events seen
// meanwhile are dropped: the scan that follows the probe finds those files.
func probeEvents(ctx context.Context, fsw *fsnotify.Watcher, dir, watcherID string, timeout time.Duration) (bool, error) {
	name := ".probe-" + watcherID
	path := filepath.Join(dir, name)
	// Atomic (a rename): a symbolic link the agent left under this name is
	// replaced, not followed to a file outside the volumes.
	if err := protocol.WriteFileAtomic(path, []byte(watcherID+"\n"), 0o644); err != nil {
		return false, fmt.Errorf("write fsnotify probe %s: %w", path, err)
	}
	defer os.Remove(path)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-fsw.Events:
			if !ok {
				return false, nil
			}
			if filepath.Base(ev.Name) == name {
				return true, nil
			}
		case _, ok := <-fsw.Errors:
			if !ok {
				return false, nil
			}
			// Overflow or a read error: keep waiting; the deadline decides.
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// isOverflow reports an fsnotify queue overflow, after which events were lost.
func isOverflow(err error) bool { return errors.Is(err, fsnotify.ErrEventOverflow) }
