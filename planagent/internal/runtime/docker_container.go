package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

const (
	containerVolumes   = "/app/volumes"
	containerWorkspace = containerVolumes + "/workspace"
	composeService     = "com.docker.compose.service"
	// heartbeatMaxAge matches the watcher's HEALTHCHECK: a heartbeat older
	// than this belongs to a dead watcher.
	heartbeatMaxAge = 15 * time.Second
	startDeadline   = 30 * time.Second
	// startedWithin bounds how long a live run leaves its container in
	// "created": create and start are two consecutive API calls.
	startedWithin = time.Minute
	// stopGrace outlasts the watcher's own 10s SIGTERM grace, so it can
	// still write "interrupted" reports before the engine kills it.
	stopGrace    = 15 // seconds
	stopDeadline = stopGrace*time.Second + 20*time.Second
	logsDrain    = 2 * time.Second
)

// removeLeftovers removes containers of crashed runs: every managed container
// that is not running, running ones serving the same volumes (they would
// compete for its commands) and running ones whose volumes dir is gone. A
// running watcher of another run on other, existing volumes may be someone
// else's live run and stays, and so does one that run has just created and
// not yet started.
func (d *Docker) removeLeftovers(ctx context.Context) error {
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true"),
	})
	if err != nil {
		return fmt.Errorf("list codeagent containers for leftovers: %w", err)
	}
	now := time.Now()
	for _, c := range list.Items {
		if !d.isLeftover(c, now) {
			continue
		}
		d.log.Info("removing leftover codingagent container", "container", shortID(c.ID),
			"run", c.Labels[LabelRun], "state", string(c.State))
		_, err := d.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove leftover container %s of run %s: %w", shortID(c.ID), c.Labels[LabelRun], err)
		}
	}
	return nil
}

// isLeftover applies removeLeftovers' rule to one managed container.
func (d *Docker) isLeftover(c containertypes.Summary, now time.Time) bool {
	vols := c.Labels[LabelVolumes]
	switch {
	case vols == d.opts.Volumes.Root || !dirExists(vols):
		return true
	case c.State == containertypes.StateRunning:
		return false
	case c.State == containertypes.StateCreated:
		// Between another run's create and start (milliseconds); removing it
		// there fails that run's start. One stuck in "created" far longer
		// belongs to a run that crashed in between.
		return now.Sub(time.Unix(c.Created, 0)) > startedWithin
	}
	return true
}

// composeWatcher returns a running compose `codingagent` service container
// that mounts our reports dir while a heartbeat there is fresh, or "". One
// that works in another workspace (planagent --workspace DIR, compose's
// ./volumes/workspace) is an error: it would claim this run's commands and
// do them in the wrong tree, whether or not we start our own container.
func (d *Docker) composeWatcher(ctx context.Context) (string, error) {
	if !Alive(d.opts.Volumes.Watchers(), heartbeatMaxAge) {
		return "", nil
	}
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", composeService+"=codingagent"),
	})
	if err != nil {
		return "", fmt.Errorf("list compose codingagent containers: %w", err)
	}
	reports, workspace := d.opts.Volumes.Reports(), d.opts.Volumes.Workspace()
	for _, c := range list.Items {
		serves, theirs := false, ""
		for _, m := range c.Mounts {
			switch m.Destination {
			case containerVolumes + "/reports":
				serves = sameDir(m.Source, reports)
			case containerWorkspace:
				theirs = m.Source
			}
		}
		if !serves {
			continue
		}
		if !sameDir(theirs, workspace) {
			return "", fmt.Errorf("%w: the compose codingagent watcher %s serves %s but works in %q, not in this run's workspace %s: "+
				"stop it (`docker compose down`) or run without --workspace",
				ErrWorkspaceMismatch, shortID(c.ID), d.opts.Volumes.Root, theirs, workspace)
		}
		return c.ID, nil
	}
	d.log.Info("a live watcher heartbeat exists but no compose container serves these volumes: starting our own",
		"watchers", d.opts.Volumes.Watchers())
	return "", nil
}

func dirExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// startContainer follows create → wait(next-exit) → start → logs, so neither
// a fast exit nor its last log lines are missed, then waits for the first
// heartbeat. On any failure the container is removed.
func (d *Docker) startContainer(ctx context.Context) (_ *watcherContainer, err error) {
	if err := d.ensureMountSources(); err != nil {
		return nil, err
	}
	// Taken before create: no heartbeat of this container can be older, and
	// a heartbeat of a container removed above is.
	since := time.Now()
	created, err := d.api.ContainerCreate(ctx, d.createOptions())
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: image %s not found: run `make image` to build it", ErrImageMissing, d.opts.Image)
		}
		return nil, fmt.Errorf("create codingagent container from %s: %w", d.opts.Image, err)
	}
	for _, w := range created.Warnings {
		d.log.Warn("docker create", "warning", w)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run := &watcherContainer{
		id:       created.ID,
		exited:   make(chan error, 1),
		done:     make(chan struct{}),
		logsDone: make(chan struct{}),
		tail:     d.newLogTail(),
		cancel:   cancel,
	}
	defer func() {
		if err != nil {
			run.stopping.Store(true)
			rmCtx, rmCancel := context.WithTimeout(context.WithoutCancel(ctx), stopDeadline)
			defer rmCancel()
			if rmErr := d.removeContainer(rmCtx, run); rmErr != nil {
				d.log.Warn("remove failed codingagent container", "container", shortID(run.id), "err", rmErr)
			}
		}
	}()

	wait := d.api.ContainerWait(bg, run.id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	run.wg.Add(1)
	go d.watchExit(bg, run, wait)

	if _, err := d.api.ContainerStart(ctx, run.id, client.ContainerStartOptions{}); err != nil {
		close(run.logsDone)
		return nil, fmt.Errorf("start codingagent container %s: %w", shortID(run.id), err)
	}
	logs, err := d.api.ContainerLogs(bg, run.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		close(run.logsDone)
		return nil, fmt.Errorf("follow logs of codingagent container %s: %w", shortID(run.id), err)
	}
	run.wg.Add(1)
	go func() {
		defer run.wg.Done()
		defer close(run.logsDone)
		defer logs.Close()
		// The stream ends with the container or with bg: both are normal.
		_, _ = stdcopy.StdCopy(run.tail, run.tail, logs)
		run.tail.Flush()
	}()

	d.log.Info("started codingagent container", "container", shortID(run.id), "image", d.opts.Image, "run", d.opts.RunID)
	if err := d.awaitHeartbeat(ctx, run, since); err != nil {
		return nil, err
	}
	d.log.Info("codingagent watcher is up", "container", shortID(run.id), "after", time.Since(since).Round(time.Millisecond))
	return run, nil
}

// ensureMountSources creates the bind-mount sources: the engine refuses a
// bind mount whose source does not exist.
func (d *Docker) ensureMountSources() error {
	for _, dir := range append(d.mountSources(), d.opts.Volumes.Watchers()) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create volumes dir for the container: %w", err)
		}
	}
	return nil
}

func (d *Docker) mountSources() []string {
	v := d.opts.Volumes
	return []string{v.Context(), v.Commands(), v.Reports(), v.Workspace()}
}

func (d *Docker) createOptions() client.ContainerCreateOptions {
	v := d.opts.Volumes
	mounts := make([]mount.Mount, 0, 4)
	for _, m := range []struct{ src, name string }{
		{v.Context(), "context"}, {v.Commands(), "commands"}, {v.Reports(), "reports"}, {v.Workspace(), "workspace"},
	} {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.src, Target: containerVolumes + "/" + m.name})
	}
	hc := &containertypes.HostConfig{
		Mounts:      mounts,
		NetworkMode: containertypes.NetworkMode(d.opts.Network),
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		// The watcher writes only to the mounts and /tmp (HOME=/tmp in the image).
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=512m"},
		Resources: containertypes.Resources{
			Memory:     d.memory,
			MemorySwap: d.memory,
			NanoCPUs:   int64(d.opts.CPUs * 1e9),
		},
	}
	if d.opts.Pids > 0 {
		hc.Resources.PidsLimit = &d.opts.Pids
	}
	if d.opts.Network != "host" {
		hc.ExtraHosts = []string{dockerHostAlias + ":host-gateway"}
	}
	return client.ContainerCreateOptions{
		Name:  d.containerName(),
		Image: d.opts.Image,
		Config: &containertypes.Config{
			User: fmt.Sprintf("%d:%d", d.opts.UID, d.opts.GID),
			Env:  d.containerEnv(),
			Labels: map[string]string{
				LabelManaged: "true",
				LabelRun:     d.opts.RunID,
				LabelVolumes: d.opts.Volumes.Root,
			},
		},
		HostConfig: hc,
	}
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// containerName is stable per run and volumes, so `docker logs` is easy to
// type, and unique across volumes trees that happen to share a run id.
func (d *Docker) containerName() string {
	sum := sha256.Sum256([]byte(d.opts.Volumes.Root))
	run := nameUnsafe.ReplaceAllString(d.opts.RunID, "-")
	if len(run) > 40 {
		run = run[:40]
	}
	return "codeagent-" + run + "-" + hex.EncodeToString(sum[:4])
}

// watchExit turns the container's exit into run.exitErr and, unless Stop
// asked for it, into an error on Exited().
func (d *Docker) watchExit(bg context.Context, run *watcherContainer, wait client.ContainerWaitResult) {
	defer run.wg.Done()
	var err error
	select {
	case res := <-wait.Result:
		err = d.exitError(context.WithoutCancel(bg), run, res)
	case werr := <-wait.Error:
		if bg.Err() != nil {
			err = errors.New("codingagent container stopped")
		} else {
			err = fmt.Errorf("lost track of codingagent container %s: %w", shortID(run.id), werr)
		}
	}
	run.exitErr = err
	close(run.done)
	if run.stopping.Load() || bg.Err() != nil {
		return
	}
	d.log.Error("codingagent container exited unexpectedly", "container", shortID(run.id), "err", err)
	run.exited <- err
}

func (d *Docker) exitError(ctx context.Context, run *watcherContainer, res containertypes.WaitResponse) error {
	code := int(res.StatusCode)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if in, err := d.api.ContainerInspect(ctx, run.id, client.ContainerInspectOptions{}); err == nil && in.Container.State != nil {
		code = in.Container.State.ExitCode
		if in.Container.State.OOMKilled {
			return fmt.Errorf("codingagent container %s was killed for running out of memory (limit %s, exit code %d): raise container_memory in the config file or CODEAGENT_CONTAINER_MEMORY",
				shortID(run.id), d.opts.Memory, code)
		}
	}
	if res.Error != nil && res.Error.Message != "" {
		return fmt.Errorf("codingagent container %s exited with code %d: %s", shortID(run.id), code, res.Error.Message)
	}
	return fmt.Errorf("codingagent container %s exited with code %d", shortID(run.id), code)
}

func (d *Docker) stopContainer(ctx context.Context, run *watcherContainer) error {
	run.stopping.Store(true)
	grace := stopGrace
	if _, err := d.api.ContainerStop(ctx, run.id, client.ContainerStopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) {
		d.log.Warn("stop codingagent container; removing it by force", "container", shortID(run.id), "err", err)
	}
	err := d.removeContainer(ctx, run)
	if err == nil {
		d.log.Info("removed codingagent container", "container", shortID(run.id))
	}
	return err
}

// removeContainer force-removes the container and ends the goroutines that
// follow it.
func (d *Docker) removeContainer(ctx context.Context, run *watcherContainer) error {
	_, err := d.api.ContainerRemove(ctx, run.id, client.ContainerRemoveOptions{Force: true})
	run.cancel()
	run.wg.Wait()
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove codingagent container %s: %w (remove it with `docker rm -f %s`)", shortID(run.id), err, shortID(run.id))
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// newLogTail streams the container's log into planagent's log: warnings and
// errors only unless Verbose, since task progress comes from the events files.
func (d *Docker) newLogTail() *lineTail {
	t := newLineTail(d.opts.Log, 20, d.opts.Env["OPENAI_API_KEY"])
	if !d.opts.Verbose {
		t.keep = WarningsOnly
	}
	return t
}
