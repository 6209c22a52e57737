package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// once carries out the command of task id and returns once its report is
// written. It serves a container made for that one attempt, so a claim of
// the same id is the leftover of an earlier container the runtime has
// already removed: it is taken over, not waited for. Cancelling ctx gives
// the task opts.Grace, then interrupts it (its report says so). The
// command is normally there at once (the runtime writes it before starting
// the container); opts.StaleAfter bounds the wait for a filesystem that
// shows it late.
func (w *watcher) once(ctx context.Context, id string) error {
	deadline := time.Now().Add(w.opts.StaleAfter)
	for {
		res, err := w.claim(id)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if res == claimWon {
			break
		}
		if res == claimBusy {
			w.log.Warn("taking over the claim of an earlier container of this task", "task", id)
			for _, p := range []string{w.claimedFile(id), w.ownerFile(id)} {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("watch: take over the claim of task %s: %w", id, err)
				}
			}
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("watch: no command for task %s in %s after %s: planagent writes it before starting the agent",
				id, w.opts.Layout.Commands(), w.opts.StaleAfter)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
	taskCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		w.log.Info("stopping: the task gets its grace period", "task", id, "grace", w.opts.Grace.String())
		t := time.AfterFunc(w.opts.Grace, cancel)
		context.AfterFunc(taskCtx, func() { t.Stop() })
	})
	defer stop()
	w.fence = true
	w.setRunning(id, true)
	defer w.setRunning(id, false)
	if err := w.process(taskCtx, id); err != nil {
		return fmt.Errorf("watch: task %s: %w", id, err)
	}
	return nil
}
