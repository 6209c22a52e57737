package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Owner is the content of commands/.claimed/<id>.owner.json.
type Owner struct {
	Watcher   string    `json:"watcher"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	ClaimedAt time.Time `json:"claimed_at"`
}

type claimResult int

const (
	claimWon  claimResult = iota
	claimLost             // another watcher renamed it first, or it is gone
	claimBusy             // a claim for this id is still being worked on
)

func (w *watcher) claimedFile(id string) string { return w.opts.Layout.ClaimFile(id) }

func (w *watcher) ownerFile(id string) string { return w.opts.Layout.OwnerFile(id) }

// claim moves commands/<id>.md into .claimed/. Rename is atomic, so when
// several watchers race exactly one succeeds and the others see ENOENT.
// A command for an id that is still claimed (planagent dispatched it again
// while it runs) waits: renaming over the claim would lose the running one.
func (w *watcher) claim(id string) (claimResult, error) {
	dst := w.claimedFile(id)
	if _, err := os.Lstat(dst); err == nil {
		return claimBusy, nil
	}
	err := os.Rename(w.opts.Layout.CommandFile(id), dst)
	switch {
	case err == nil:
		return claimWon, nil
	case errors.Is(err, fs.ErrNotExist):
		return claimLost, nil
	default:
		return claimLost, fmt.Errorf("claim command %s: %w", id, err)
	}
}

func (w *watcher) writeOwner(id string) error {
	data, err := json.Marshal(Owner{Watcher: w.opts.WatcherID, PID: w.pid, Host: w.host, ClaimedAt: w.opts.Now().UTC()})
	if err != nil {
		return fmt.Errorf("encode owner of claim %s: %w", id, err)
	}
	if err := replaceFile(w.ownerFile(id), data); err != nil {
		return fmt.Errorf("write owner of claim %s: %w", id, err)
	}
	return nil
}

func readOwner(path string) (Owner, error) {
	data, err := protocol.ReadRegular(path, protocol.MaxFileSize)
	if err != nil {
		return Owner{}, err
	}
	var o Owner
	if err := json.Unmarshal(data, &o); err != nil {
		return Owner{}, fmt.Errorf("claim owner %s: %w", path, err)
	}
	return o, nil
}

// release removes the claim files of id once its report is written. The
// command file goes first: a claim without its command is never retaken.
func (w *watcher) release(id string) {
	for _, p := range []string{w.claimedFile(id), w.ownerFile(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("remove claim file", "task", id, "path", p, "err", err)
		}
	}
}

// setAside moves a "<name>.md" whose name is not a valid task id out of
// commands/ so it is reported once instead of on every scan.
func (w *watcher) setAside(name string) {
	src := filepath.Join(w.opts.Layout.Commands(), name)
	dst := filepath.Join(w.opts.Layout.Claimed(), name+".invalid")
	err := os.Rename(src, dst)
	if errors.Is(err, fs.ErrNotExist) {
		return // another watcher set it aside first
	}
	if err != nil {
		w.log.Error("cannot set aside a command file with an invalid name", "file", src, "err", err)
		return
	}
	w.log.Error("command file name is not a valid task id: moved aside, no report written",
		"file", src, "moved_to", dst, "problem", protocol.ValidateStem(name[:len(name)-len(".md")]))
}
