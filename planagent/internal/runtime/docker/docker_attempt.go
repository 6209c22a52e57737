package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/heartbeat"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// Launch starts the container of one attempt: the configured image with
// the codingagent binary bind-mounted, running `codingagent watch --task ID`
// for exactly that command. Its volumes are the attempt's own
// (attemptIO: its command, context and memory copied in) with the
// attempt's copy of the workspace at the same path under them as on the
// host (the command names it relative to the root); nothing the run's
// other tasks or planagent use is mounted. It returns once the container
// runs. The container is removed when it exits, and only then is its
// report taken into reports/ (the fence: nothing of an attempt is read
// while anything that mounted it can run); one that ends without a report
// of its attempt (killed, OOM) is an Exit on Exited(). With a compose
// watcher it does nothing.
func (d *Docker) Launch(ctx context.Context, a Attempt) error {
	d.mu.Lock()
	if !d.started {
		d.mu.Unlock()
		return errors.New("docker runtime: Launch before Start: start the runtime first")
	}
	if d.compose != "" {
		d.composeLaunched(a)
		d.mu.Unlock()
		return nil
	}
	// What is replaced: the container of this very attempt (launched
	// again), and those of the task's attempts given up on whose removal
	// failed then (Abandon keeps them here). The task's other attempts
	// run on beside this one (best-of-N: several at once).
	var earlier []*agentContainer
	for key, c := range d.attempts {
		if c.task == a.TaskID && (c.attempt == a.Attempt || c.stopping.Load()) {
			earlier = append(earlier, c)
			delete(d.attempts, key)
		}
	}
	d.mu.Unlock()
	for _, c := range earlier {
		// It must not write into the volumes beside the new one.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		err := d.stopContainer(stopCtx, c, nil)
		cancel()
		if err != nil {
			if c.unfollow != nil {
				c.unfollow() // given up on: its gateway token ends now
			}
			return fmt.Errorf("task %s: remove the container of attempt %d: %w", a.TaskID, c.attempt, err)
		}
		d.fenced(c, false)
	}
	aio, err := d.stageIO(a)
	if err != nil {
		return err
	}
	// The attempt's gateway token lives as long as the host follows the
	// attempt: unfollow runs on every end (fenced, an unfenced end, a
	// failed start) and revokes it with the live view.
	token, revoke, err := d.issueToken(a.Name())
	if err != nil {
		_ = removeTree(aio.l.Root)
		return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
	}
	s, err := d.attemptSpec(a, aio, token)
	if err != nil {
		revoke()
		_ = removeTree(aio.l.Root)
		return err
	}
	// Its way out under closed egress ends with the token.
	out, err := d.openNet(netAttempt, a.TaskID, a.Attempt)
	if err != nil {
		revoke()
		_ = removeTree(aio.l.Root)
		return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
	}
	s.mounts = append(s.mounts, out.mounts()...)
	unfollow := d.follow(aio, s.name)
	// Once: an attempt given up on ends its token when its removal fails
	// and again when a later Launch or Stop removes it.
	var ended sync.Once
	s.unfollow = func() { ended.Do(func() { unfollow(); revoke(); out.close() }) }
	c, err := d.runContainer(ctx, s, d.attemptEnded)
	if err != nil {
		s.unfollow()
		_ = removeTree(aio.l.Root)
		return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
	}
	d.log.Info("started the attempt's container", "task", a.TaskID, "attempt", a.Attempt, "container", shortID(c.id), "image", d.opts.Image)
	d.mu.Lock()
	if d.started {
		d.attempts[a.Name()] = c
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	// Stop ran meanwhile and did not see this container.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	defer cancel()
	if d.stopContainer(stopCtx, c, nil) == nil {
		d.fenced(c, false)
	}
	return errors.New("docker runtime stopped while the attempt's container started")
}

// follow starts the host's live view of an attempt's own volumes while
// its container runs: its events copied into reports/ and a heartbeat for
// it in the watchers dir (its agent's own stays in its volumes). The
// function returned ends both, after a last copy of the events.
func (d *Docker) follow(aio *attemptIO, name string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { d.mirrorEvents(ctx, aio) })
	wg.Go(func() { heartbeat.Keep(ctx, d.opts.Volumes.Watchers(), "docker-"+name, name, nil) })
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// fenced takes back what an attempt's container, now removed, left in its
// own volumes: with report, its report too (see collectIO). It returns
// whether a report of the attempt is in reports/ and, when one was there
// but refused, why.
func (d *Docker) fenced(c *agentContainer, report bool) (bool, error) {
	if c.io == nil {
		return false, nil
	}
	if c.unfollow != nil {
		c.unfollow()
	}
	code := c.code
	if !report {
		code = -1
	}
	ok, err := d.collectIO(c.io, code)
	if err != nil {
		d.log.Error("the attempt's report is refused", "task", c.task, "attempt", c.attempt, "err", err)
	}
	return ok, err
}

// Abandon removes the container of attempt n of task taskID, which the
// orchestrator gave up on (timed out, or a sibling attempt won), at once,
// so it cannot write into the attempt's copy once that is thrown away; the
// task's other attempts run on. One that cannot be removed stays followed,
// for the next Launch of the task and Stop to remove. With a compose
// watcher it does nothing.
func (d *Docker) Abandon(ctx context.Context, taskID string, n int) error {
	key := Attempt{TaskID: taskID, Attempt: n}.Name()
	d.mu.Lock()
	c := d.attempts[key]
	delete(d.attempts, key)
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	c.stopping.Store(true)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	defer cancel()
	if err := d.removeContainer(ctx, c); err != nil {
		if c.unfollow != nil {
			c.unfollow() // given up on: its gateway token ends now
		}
		d.mu.Lock()
		if d.started {
			d.attempts[key] = c
		}
		d.mu.Unlock()
		return fmt.Errorf("task %s: remove the container of attempt %d: %w", taskID, n, err)
	}
	d.fenced(c, false)
	d.log.Info("removed the abandoned attempt's container", "task", taskID, "attempt", n, "container", shortID(c.id))
	return nil
}

// attemptSpec mounts the attempt's own volumes (aio) read-write, its
// context layers read-only over them, and its workspace: the copy at its
// relative path, or the default workspace for a run without copies.
func (d *Docker) attemptSpec(a Attempt, aio *attemptIO, token string) (spec, error) {
	workspace := layout.WorkspaceDir
	if a.Rel != "" {
		if err := protocol.ValidateWorkspace(a.Rel); err != nil {
			return spec{}, fmt.Errorf("task %s: %w", a.TaskID, err)
		}
		workspace = path.Join(layout.VolumesDir, a.Rel)
	}
	if fi, err := os.Stat(a.Dir); err != nil || !fi.IsDir() {
		return spec{}, fmt.Errorf("task %s: the attempt's workspace %s is not a directory", a.TaskID, a.Dir)
	}
	l := aio.l
	mounts := []mount.Mount{
		{Type: mount.TypeBind, Source: l.Root, Target: layout.VolumesDir},
		{Type: mount.TypeBind, Source: l.ProjectContext(), Target: layout.VolumesDir + "/context/project", ReadOnly: true},
		{Type: mount.TypeBind, Source: l.TaskContext(a.TaskID), Target: layout.VolumesDir + "/context/task/" + a.TaskID, ReadOnly: true},
		{Type: mount.TypeBind, Source: a.Dir, Target: workspace},
	}
	return spec{
		name: d.containerName(a.TaskID, strconv.Itoa(a.Attempt)), role: "attempt", task: a.TaskID, attempt: a.Attempt,
		entrypoint: []string{layout.AgentBinary},
		cmd:        []string{"watch", "--task", a.TaskID, "--volumes", layout.VolumesDir, "--workspace", workspace},
		workdir:    workspace,
		mounts:     mounts,
		env:        d.containerEnv(token),
		io:         aio,
	}, nil
}

// attemptEnded runs when an attempt's container exits on its own. The
// container is removed first: only then is its report taken (fenced);
// without one of the attempt it is an Exit for the orchestrator.
func (d *Docker) attemptEnded(c *agentContainer) {
	reported, cause := d.endAttempt(c)
	if reported {
		return
	}
	var unfenced *unfencedError
	isUnfenced := errors.As(cause, &unfenced)
	err := c.exitErr
	switch {
	case cause != nil:
		err = cause
	case err == nil:
		err = fmt.Errorf("container %s exited without a report", shortID(c.id))
	case c.code != 0:
		err = fmt.Errorf("%w (a report is taken only from an agent that ended normally)", err)
	}
	err = fmt.Errorf("the agent of task %s (attempt %d) died: %w%s", c.task, c.attempt, err, d.logsTail(c))
	d.log.Error("an attempt's container ended without its report", "task", c.task, "attempt", c.attempt, "err", err)
	select {
	case d.exited <- Exit{TaskID: c.task, Attempt: c.attempt, Err: err, Unfenced: isUnfenced}:
	case <-c.bg.Done(): // Stop or a newer attempt took over
	}
}

// endAttempt removes the exited container of an attempt and takes its
// results; Stop waits for it.
func (d *Docker) endAttempt(c *agentContainer) (bool, error) {
	select {
	case <-c.logsDone:
	case <-time.After(layout.LogsDrain):
	}
	d.mu.Lock()
	if key := (Attempt{TaskID: c.task, Attempt: c.attempt}).Name(); d.attempts[key] == c {
		delete(d.attempts, key)
	}
	// Under mu, so a Stop that no longer sees c waits for its removal; once
	// Stop has run (started false) nothing waits any more.
	if d.started {
		d.ending.Add(1)
		defer d.ending.Done()
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), layout.StopDeadline)
	defer cancel()
	c.stopping.Store(true)
	if err := d.forceRemove(ctx, c.id); err != nil {
		d.log.Warn("remove the attempt's container", "container", shortID(c.id), "err", err)
		if c.unfollow != nil {
			c.unfollow()
		}
		return false, &unfencedError{id: shortID(c.id), err: err}
	}
	return d.fenced(c, true)
}

// unfencedError: an attempt's container could not be removed, so it may
// still run; nothing of the attempt is read and its copy is not reused.
type unfencedError struct {
	id  string
	err error
}

func (e *unfencedError) Error() string {
	return fmt.Sprintf("its container %s could not be removed, so nothing of it is read (remove it with `docker rm -f %s`): %v", e.id, e.id, e.err)
}

func (e *unfencedError) Unwrap() error { return e.err }

// containerPath maps a host directory under the volumes to its path in a
// container: the default workspace or anything under attempts/.
func (d *Docker) containerPath(dir string) (string, error) {
	if p, ok := layout.ContainerDir(d.opts.Volumes, dir); ok {
		return p, nil
	}
	return "", fmt.Errorf("docker runtime: %s is neither the workspace nor under %s", dir, d.opts.Volumes.Attempts())
}
