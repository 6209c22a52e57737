package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeagent/codeagent/internal/protocol"
)

const retakeMark = ".md.retake-"

// recoverClaims retakes the claims of watchers that died: claims whose
// owner has no fresh heartbeat, claims left ownerless for StaleAfter, and
// retakes another watcher began and did not finish.
func (w *watcher) recoverClaims() {
	dir := w.opts.Layout.Claimed()
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.log.Error("scan claims", "dir", dir, "err", err)
		return
	}
	now := w.opts.Now()
	alive := make(map[string]bool)
	isAlive := func(watcher string) bool {
		if v, ok := alive[watcher]; ok {
			return v
		}
		h, err := protocol.ReadHeartbeat(w.opts.Layout.Watchers(), watcher)
		v := err == nil && h.Fresh(now, w.opts.StaleAfter)
		alive[watcher] = v
		return v
	}
	seen := make(map[string]bool)
	for _, e := range entries {
		name := e.Name()
		if id, owner, ok := strings.Cut(name, retakeMark); ok {
			if protocol.ValidateStem(id) == nil && owner != w.opts.WatcherID && !isAlive(owner) {
				w.retake(id, name)
			}
			continue
		}
		id, ok := strings.CutSuffix(name, ".md")
		if !ok || protocol.ValidateStem(id) != nil {
			continue
		}
		if _, ours := w.inflight[id]; ours {
			continue
		}
		seen[id] = true
		o, err := readOwner(w.ownerFile(id))
		switch {
		case err != nil:
			// No (readable) owner yet: the claimer may be between its rename
			// and its owner write. Only a claim ownerless for StaleAfter is dead.
			first, ok := w.ownerless[id]
			if !ok {
				w.ownerless[id] = now
				continue
			}
			if now.Sub(first) < w.opts.StaleAfter {
				continue
			}
		case o.Watcher == w.opts.WatcherID:
			// Ours but not running: left by an earlier process with our id,
			// or by a report we failed to write.
		case isAlive(o.Watcher):
			continue
		}
		delete(w.ownerless, id)
		w.log.Warn("retaking a claim whose watcher is gone", "task", id, "owner", o.Watcher)
		w.retake(id, name)
	}
	for id := range w.ownerless {
		if !seen[id] {
			delete(w.ownerless, id)
		}
	}
}

// retake takes over claimed file name of id and puts the command back into
// commands/ with the next attempt number, or writes the final failed report
// when the attempts are used up.
func (w *watcher) retake(id, name string) {
	dir := w.opts.Layout.Claimed()
	tmp := filepath.Join(dir, id+retakeMark+w.opts.WatcherID)
	if err := os.Rename(filepath.Join(dir, name), tmp); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w.log.Error("retake claim", "task", id, "err", err)
		}
		return // another watcher retook it first
	}
	if err := w.requeue(id, tmp); err != nil {
		w.log.Error("retake claim", "task", id, "err", err)
		return // tmp stays; our next reconcile does not touch our own retakes, a restart does
	}
	if err := os.Remove(tmp); err != nil {
		w.log.Warn("remove retaken claim", "task", id, "err", err)
	}
	if err := os.Remove(w.ownerFile(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("remove owner of retaken claim", "task", id, "err", err)
	}
}

func (w *watcher) requeue(id, path string) error {
	cmd, data, err := readCommand(path, w.opts.Layout.CommandFile(id))
	if err != nil {
		return w.writeReport(id, failedReport(id, data, err))
	}
	if rep, err := protocol.ReadReport(w.opts.Layout.ReportFile(id)); err == nil && rep.RunID == cmd.RunID && rep.Attempt >= cmd.Attempt {
		w.log.Info("claim already has its report: removing it", "task", id, "attempt", cmd.Attempt)
		return nil
	}
	if cmd.Attempt >= w.opts.MaxAttempts {
		msg := fmt.Sprintf("abandoned after %d attempts: the watchers running it died", cmd.Attempt)
		w.log.Error("command abandoned", "task", id, "attempts", cmd.Attempt)
		return w.writeReport(id, &protocol.Report{ID: cmd.ID, RunID: cmd.RunID, Attempt: cmd.Attempt,
			Status: protocol.StatusFailed, Summary: msg, Error: msg})
	}
	if _, err := os.Lstat(w.opts.Layout.CommandFile(id)); err == nil {
		w.log.Info("claim superseded by a newer command file: dropping it", "task", id)
		return nil
	}
	cmd.Attempt++
	if err := protocol.WriteCommand(w.opts.Layout.CommandFile(id), cmd); err != nil {
		return fmt.Errorf("put command %s back with attempt %d: %w", id, cmd.Attempt, err)
	}
	w.log.Info("command put back for another attempt", "task", id, "attempt", cmd.Attempt)
	return nil
}
