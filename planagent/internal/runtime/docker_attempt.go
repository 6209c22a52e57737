package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/codeagent/codeagent/internal/protocol"
)

// Launch starts the container of one attempt: the configured image with
// the codingagent binary bind-mounted, running `codingagent watch --task ID`
// for exactly that command. It sees context/, commands/ and reports/ and
// the attempt's copy of the workspace at the same path under its volumes
// root as on the host (the command names it relative to the root). It
// returns once the container runs; the container is removed when the
// attempt ends, and one that ends without the attempt's report (killed,
// OOM) is an Exit on Exited(). With a compose watcher it does nothing.
func (d *Docker) Launch(ctx context.Context, a Attempt) error {
	d.mu.Lock()
	if !d.started {
		d.mu.Unlock()
		return errors.New("docker runtime: Launch before Start: start the runtime first")
	}
	if d.compose != "" {
		d.mu.Unlock()
		return nil
	}
	earlier := d.attempts[a.TaskID]
	delete(d.attempts, a.TaskID)
	d.mu.Unlock()
	if earlier != nil {
		// An attempt the orchestrator gave up on (timed out): it must not
		// write into the volumes beside the new one.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopDeadline)
		err := d.stopContainer(stopCtx, earlier, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("task %s: remove the container of attempt %d: %w", a.TaskID, earlier.attempt, err)
		}
	}
	s, err := d.attemptSpec(a)
	if err != nil {
		return err
	}
	c, err := d.runContainer(ctx, s, d.attemptEnded)
	if err != nil {
		return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
	}
	d.log.Info("started the attempt's container", "task", a.TaskID, "attempt", a.Attempt, "container", shortID(c.id), "image", d.opts.Image)
	d.mu.Lock()
	if d.started {
		d.attempts[a.TaskID] = c
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	// Stop ran meanwhile and did not see this container.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopDeadline)
	defer cancel()
	_ = d.stopContainer(stopCtx, c, nil)
	return errors.New("docker runtime stopped while the attempt's container started")
}

// Abandon removes the container of an attempt the orchestrator gave up on
// (timed out) at once, so it cannot write into the attempt's copy once that
// is thrown away. With a compose watcher it does nothing.
func (d *Docker) Abandon(ctx context.Context, taskID string) error {
	d.mu.Lock()
	c := d.attempts[taskID]
	delete(d.attempts, taskID)
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	c.stopping.Store(true)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopDeadline)
	defer cancel()
	if err := d.removeContainer(ctx, c); err != nil {
		return fmt.Errorf("task %s: remove the container of attempt %d: %w", taskID, c.attempt, err)
	}
	d.log.Info("removed the timed-out attempt's container", "task", taskID, "attempt", c.attempt, "container", shortID(c.id))
	return nil
}

// attemptSpec mounts what the attempt needs: context/ (sessions, memory),
// commands/ (its claim) and reports/ (report, events, heartbeat) read-write,
// and its workspace: the copy at its relative path, or the default
// workspace for a run without copies.
func (d *Docker) attemptSpec(a Attempt) (spec, error) {
	v := d.opts.Volumes
	for _, dir := range []string{v.Context(), v.Commands(), v.Claimed(), v.Reports(), v.Watchers()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return spec{}, fmt.Errorf("create volumes dir for the container: %w", err)
		}
	}
	workspace := containerWorkspace
	if a.Rel != "" {
		if err := protocol.ValidateWorkspace(a.Rel); err != nil {
			return spec{}, fmt.Errorf("task %s: %w", a.TaskID, err)
		}
		workspace = path.Join(containerVolumes, a.Rel)
	}
	if fi, err := os.Stat(a.Dir); err != nil || !fi.IsDir() {
		return spec{}, fmt.Errorf("task %s: the attempt's workspace %s is not a directory", a.TaskID, a.Dir)
	}
	mounts := []mount.Mount{
		{Type: mount.TypeBind, Source: v.Context(), Target: containerVolumes + "/context"},
		{Type: mount.TypeBind, Source: v.Commands(), Target: containerVolumes + "/commands"},
		{Type: mount.TypeBind, Source: v.Reports(), Target: containerVolumes + "/reports"},
		{Type: mount.TypeBind, Source: a.Dir, Target: workspace},
	}
	return spec{
		name: d.containerName(a.TaskID, strconv.Itoa(a.Attempt)), role: "attempt", task: a.TaskID, attempt: a.Attempt,
		entrypoint: []string{agentBinary},
		cmd:        []string{"watch", "--task", a.TaskID, "--volumes", containerVolumes, "--workspace", workspace},
		workdir:    workspace,
		mounts:     mounts,
		env:        d.containerEnv(),
	}, nil
}

// attemptEnded runs when an attempt's container exits on its own: without
// the attempt's report it is an Exit for the orchestrator, and either way
// the container is removed.
func (d *Docker) attemptEnded(c *agentContainer) {
	if !d.reported(c.task, c.attempt) {
		err := c.exitErr
		if err == nil {
			err = fmt.Errorf("container %s exited without a report", shortID(c.id))
		}
		err = fmt.Errorf("the agent of task %s (attempt %d) died: %w%s", c.task, c.attempt, err, d.logsTail(c))
		d.log.Error("an attempt's container ended without its report", "task", c.task, "attempt", c.attempt, "err", err)
		select {
		case d.exited <- Exit{TaskID: c.task, Attempt: c.attempt, Err: err}:
		case <-c.bg.Done(): // Stop or a newer attempt took over
		}
	}
	select {
	case <-c.logsDone:
	case <-time.After(logsDrain):
	}
	d.mu.Lock()
	if d.attempts[c.task] == c {
		delete(d.attempts, c.task)
	}
	// Under mu, so a Stop that no longer sees c waits for its removal; once
	// Stop has run (started false) nothing waits any more.
	if d.started {
		d.ending.Add(1)
		defer d.ending.Done()
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), stopDeadline)
	defer cancel()
	c.stopping.Store(true)
	if err := d.forceRemove(ctx, c.id); err != nil {
		d.log.Warn("remove the attempt's container", "container", shortID(c.id), "err", err)
	}
}

// reported reports whether the report of task's attempt of this run is in.
func (d *Docker) reported(task string, attempt int) bool {
	rep, err := protocol.ReadReport(d.opts.Volumes.ReportFile(task))
	return err == nil && rep.RunID == d.opts.RunID && rep.Attempt == attempt
}

// containerPath maps a host directory under the volumes to its path in a
// container: the default workspace or anything under attempts/.
func (d *Docker) containerPath(dir string) (string, error) {
	v := d.opts.Volumes
	if sameDir(dir, v.Workspace()) {
		return containerWorkspace, nil
	}
	if rel, err := filepath.Rel(v.Attempts(), dir); err == nil && rel != "." && !filepath.IsAbs(rel) && filepath.IsLocal(rel) {
		return containerVolumes + "/attempts/" + filepath.ToSlash(rel), nil
	}
	return "", fmt.Errorf("docker runtime: %s is neither the workspace nor under %s", dir, v.Attempts())
}
