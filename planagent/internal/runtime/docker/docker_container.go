package docker

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runtime/agentbin"
	"github.com/codeagent/codeagent/planagent/internal/runtime/agentlog"
	"github.com/codeagent/codeagent/planagent/internal/runtime/heartbeat"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

const (
	// composeVolumes is where the compose watcher (docker-compose.yml)
	// mounts the volumes.
	composeVolumes   = "/app/volumes"
	composeWorkspace = composeVolumes + "/workspace"
	composeService   = "com.docker.compose.service"
	// agentCABundle is the host's CA certificates, beside the binary.
	agentCABundle = layout.AgentDir + "/ca-certificates.crt"
	// heartbeatMaxAge matches the watcher's HEALTHCHECK: a heartbeat older
	// than this belongs to a dead watcher.
	heartbeatMaxAge = 15 * time.Second
	// startTimeout bounds create and start of one container.
	startTimeout = time.Minute
)

// removeLeftovers removes the containers of runs that are provably dead,
// whatever their state: an exited container of a live run may be an
// acceptance command whose output that run has yet to read. Dead means this
// run's own earlier life (a resume), another run on these volumes whose
// lock is free, or a run whose volumes dir is gone. Another volumes dir's
// containers stay while it exists: the runs there are for their own next
// start to judge.
func (d *Docker) removeLeftovers(ctx context.Context) error {
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", layout.LabelManaged+"=true"),
	})
	if err != nil {
		return fmt.Errorf("list codeagent containers for leftovers: %w", err)
	}
	ours := map[string]bool{} // hostnames of removed containers that served our volumes
	for _, c := range list.Items {
		dead, err := d.isLeftover(c)
		if err != nil {
			return err
		}
		if !dead {
			continue
		}
		d.log.Info("removing leftover codingagent container", "container", shortID(c.ID),
			"run", c.Labels[layout.LabelRun], "state", string(c.State))
		if err := d.forceRemove(ctx, c.ID); err != nil {
			return fmt.Errorf("remove leftover container %s of run %s: %w", shortID(c.ID), c.Labels[layout.LabelRun], err)
		}
		if c.Labels[layout.LabelVolumes] == d.opts.Volumes.Root {
			ours[shortID(c.ID)] = true
		}
	}
	d.freeClaims(ours)
	return nil
}

// freeClaims deletes the claims and heartbeats of the removed containers
// (a container's hostname is its short id): their watchers are gone for
// certain, so a resumed run sends their tasks again at once from a fresh
// copy instead of waiting for the heartbeat timeout to call them dead.
func (d *Docker) freeClaims(hosts map[string]bool) {
	if len(hosts) == 0 {
		return
	}
	host := func(file string) string {
		f, err := protocol.OpenRegular(file, os.O_RDONLY, 0)
		if err != nil {
			return ""
		}
		defer f.Close()
		var v struct {
			Host string `json:"host"`
		}
		if json.NewDecoder(io.LimitReader(f, 1<<16)).Decode(&v) != nil {
			return ""
		}
		return v.Host
	}
	owners, _ := filepath.Glob(filepath.Join(d.opts.Volumes.Claimed(), "*"+volume.OwnerSuffix))
	for _, o := range owners {
		if !hosts[host(o)] {
			continue
		}
		id := strings.TrimSuffix(filepath.Base(o), volume.OwnerSuffix)
		d.log.Info("freeing the claim of a removed container", "task", id)
		_ = os.Remove(d.opts.Volumes.ClaimFile(id))
		_ = os.Remove(o)
	}
	beats, _ := filepath.Glob(filepath.Join(d.opts.Volumes.Watchers(), "*.json"))
	for _, b := range beats {
		if hosts[host(b)] {
			_ = os.Remove(b)
		}
	}
}

// isLeftover applies removeLeftovers' rule to one managed container.
func (d *Docker) isLeftover(c containertypes.Summary) (bool, error) {
	vols, run := c.Labels[layout.LabelVolumes], c.Labels[layout.LabelRun]
	switch {
	case vols != d.opts.Volumes.Root:
		return !dirExists(vols), nil
	case run == d.opts.RunID:
		return true, nil
	case run == "" || run == "." || run == ".." || strings.ContainsAny(run, `/\`):
		// No run of ours is named so (and its lock path would lie elsewhere).
		return true, nil
	}
	free, err := runlock.Free(d.opts.Volumes.Run(run))
	if err != nil {
		return false, fmt.Errorf("container %s of run %s: is that run alive? %w (fix its volumes dir's permissions, or remove the container with docker rm -f)",
			shortID(c.ID), run, err)
	}
	return free, nil
}

// composeWatcher returns a running compose `codingagent` service container
// that mounts our reports dir while a heartbeat there is fresh, or "". One
// that works in another workspace (planagent --workspace DIR, compose's
// ./volumes/workspace) is an error: it would claim this run's commands and
// do them in the wrong tree, whether or not we start our own container.
func (d *Docker) composeWatcher(ctx context.Context) (string, error) {
	if !heartbeat.Alive(d.opts.Volumes.Watchers(), heartbeatMaxAge) {
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
			case composeVolumes + "/reports":
				serves = sameDir(m.Source, reports)
			case composeWorkspace:
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

// agentContainer is one container this backend created and follows.
type agentContainer struct {
	id       string
	task     string // "" for an acceptance command's container
	attempt  int
	exitErr  error         // set before done is closed
	code     int           // exit code, set before done is closed
	done     chan struct{} // closed once the container has exited
	logsDone chan struct{} // closed when the log stream ends
	tail     *lineTail
	stopping atomic.Bool
	bg       context.Context    // ends when the container is removed
	cancel   context.CancelFunc // ends the wait and log streams
	wg       sync.WaitGroup
	// io is an attempt's own volumes, unfollow ends the host's live view
	// of them (events copy, heartbeat); nil for other containers.
	io       *attemptIO
	unfollow func()
}

// spec is what differs between the containers this backend creates.
type spec struct {
	name       string
	role       string // attempt, exec, preflight
	task       string
	attempt    int
	entrypoint []string
	cmd        []string
	workdir    string
	mounts     []mount.Mount
	env        []string
	io         *attemptIO
	unfollow   func()
}

// createOptions makes a container of the configured image that runs as
// the operator, without capabilities, with the limits and network of the
// config, HOME on a tmpfs (the uid may have no home in the image) and the
// codingagent binary and CA bundle mounted read-only.
func (d *Docker) createOptions(s spec) client.ContainerCreateOptions {
	mounts := append([]mount.Mount{{Type: mount.TypeBind, Source: d.opts.Binary, Target: layout.AgentBinary, ReadOnly: true}}, s.mounts...)
	env := append([]string{"HOME=/tmp"}, s.env...)
	if d.ca != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: d.ca, Target: agentCABundle, ReadOnly: true})
		env = append(env, "SSL_CERT_FILE="+agentCABundle)
	}
	// git refuses a repository owned by another uid ("dubious ownership");
	// the copies belong to the operator, whose uid the container may not
	// map to a user. The setting goes by environment: no config file is written.
	env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	noInit := false
	hc := &containertypes.HostConfig{
		// The entrypoint is the container's first process even where the
		// engine adds an init by default: codingagent, as init, ends every
		// other process before it writes its report (the fence).
		Init:        &noInit,
		Mounts:      mounts,
		NetworkMode: containertypes.NetworkMode(d.opts.Network),
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		// The root filesystem stays writable: images keep caches there
		// (GOPATH, pip) and the container is thrown away after the attempt.
		// exec: `go test` and friends run what they build in /tmp.
		Tmpfs: map[string]string{"/tmp": "rw,exec,nosuid,nodev,size=512m,mode=1777"},
		Resources: containertypes.Resources{
			Memory:     d.memory,
			MemorySwap: d.memory,
			NanoCPUs:   int64(d.opts.CPUs * 1e9),
		},
	}
	if d.opts.Pids > 0 {
		hc.Resources.PidsLimit = &d.opts.Pids
	}
	if d.closed() {
		// Only the container's own loopback: out through planagent's
		// sockets alone (docker_net.go).
		hc.NetworkMode = "none"
	} else if d.opts.Network != "host" {
		hc.ExtraHosts = []string{dockerHostAlias + ":host-gateway"}
	}
	labels := map[string]string{
		layout.LabelManaged: "true",
		layout.LabelRun:     d.opts.RunID,
		layout.LabelVolumes: d.opts.Volumes.Root,
		layout.LabelRole:    s.role,
	}
	if s.task != "" {
		labels[layout.LabelTask], labels[layout.LabelAttempt] = s.task, strconv.Itoa(s.attempt)
	}
	return client.ContainerCreateOptions{
		Name:  s.name,
		Image: d.opts.Image,
		Config: &containertypes.Config{
			User:        fmt.Sprintf("%d:%d", d.opts.UID, d.opts.GID),
			Env:         env,
			Entrypoint:  s.entrypoint,
			Cmd:         s.cmd,
			WorkingDir:  s.workdir,
			Labels:      labels,
			Healthcheck: &containertypes.HealthConfig{Test: []string{"NONE"}},
		},
		HostConfig: hc,
	}
}

// runContainer follows create → wait(next-exit) → start → logs, so neither
// a fast exit nor its last log lines are missed. onExit runs once the
// container has exited (c.exitErr and c.code set), unless it is being
// stopped. On any failure the container is removed.
//
// Create and start are not cut short by ctx: a Ctrl-C during the start
// (the container may already run the task) would otherwise leave a
// container the caller never hears of, killed without its grace; the
// caller stops what it got instead.
func (d *Docker) runContainer(ctx context.Context, s spec, onExit func(c *agentContainer)) (_ *agentContainer, err error) {
	ctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancelStart()
	created, err := d.api.ContainerCreate(ctx, d.createOptions(s))
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, d.imageMissing()
		}
		return nil, fmt.Errorf("create a container from %s: %w", d.opts.Image, err)
	}
	for _, w := range created.Warnings {
		d.log.Warn("docker create", "warning", w)
	}
	tail := d.newLogTail()
	if s.role != "attempt" {
		tail = newLineTail(nil, 20, d.opts.Env[config.APIKeyEnv]) // kept for errors, not logged
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &agentContainer{
		id: created.ID, task: s.task, attempt: s.attempt,
		done:     make(chan struct{}),
		logsDone: make(chan struct{}),
		tail:     tail,
		bg:       bg,
		cancel:   cancel,
		io:       s.io,
		unfollow: s.unfollow,
	}
	defer func() {
		if err != nil {
			c.stopping.Store(true)
			rmCtx, rmCancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
			defer rmCancel()
			if rmErr := d.removeContainer(rmCtx, c); rmErr != nil {
				d.log.Warn("remove the failed container", "container", shortID(c.id), "err", rmErr)
			}
		}
	}()

	wait := d.api.ContainerWait(bg, c.id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	c.wg.Add(1)
	go d.watchExit(bg, c, wait, onExit)

	if _, err := d.api.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		close(c.logsDone)
		return nil, fmt.Errorf("start container %s from %s: %w", shortID(c.id), d.opts.Image, err)
	}
	logs, err := d.api.ContainerLogs(bg, c.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		close(c.logsDone)
		return nil, fmt.Errorf("follow logs of container %s: %w", shortID(c.id), err)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.logsDone)
		defer logs.Close()
		// The stream ends with the container or with bg: both are normal.
		_, _ = stdcopy.StdCopy(c.tail, c.tail, logs)
		c.tail.Flush()
	}()
	return c, nil
}

// engineFault marks err, from a call to the engine, as the engine's outage
// (envfault.ErrEngine) when the connection to it broke rather than the
// engine answering an error: the run then stops resumable instead of
// failing the task whose container it was.
func engineFault(err error) error {
	if err == nil || errors.Is(err, envfault.ErrEngine) {
		return err
	}
	if client.IsErrConnectionFailed(err) || envfault.Disconnected(err) {
		return fmt.Errorf("%w: %w", envfault.ErrEngine, err)
	}
	return err
}

// watchExit turns the container's exit into c.exitErr and c.code, then
// calls onExit unless Stop asked for the exit.
func (d *Docker) watchExit(bg context.Context, c *agentContainer, wait client.ContainerWaitResult, onExit func(*agentContainer)) {
	defer c.wg.Done()
	var err error
	code := -1
	select {
	case res := <-wait.Result:
		code, err = d.exitError(context.WithoutCancel(bg), c, res)
	case werr := <-wait.Error:
		if bg.Err() != nil {
			err = errors.New("container stopped")
		} else {
			err = fmt.Errorf("lost track of container %s (is the engine still running?): %w", shortID(c.id), engineFault(werr))
		}
	}
	c.exitErr, c.code = err, code
	close(c.done)
	if c.stopping.Load() || bg.Err() != nil || onExit == nil {
		return
	}
	onExit(c)
}

// oomSettleTries and oomSettleStep bound how long exitError waits for the
// engine's OOM event after a SIGKILLed container's exit (1 s in all).
const (
	oomSettleTries = 5
	oomSettleStep  = 200 * time.Millisecond
)

// exitError returns the container's exit code and, for a non-zero one or
// an OOM kill, what happened.
func (d *Docker) exitError(ctx context.Context, c *agentContainer, res containertypes.WaitResponse) (int, error) {
	code := int(res.StatusCode)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The engine learns of an OOM kill from an event of its own, which
	// can land after the exit's: a SIGKILLed container (137) not yet
	// marked is looked at again for a moment before it is taken for
	// killed by something else.
	step := d.oomSettle
	if step == 0 {
		step = oomSettleStep
	}
	for try := 0; ; try++ {
		in, err := d.api.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
		if err != nil || in.Container.State == nil {
			break
		}
		code = in.Container.State.ExitCode
		if in.Container.State.OOMKilled {
			return code, fmt.Errorf("container %s was killed for running out of memory (limit %s, exit code %d): raise container_memory in the config file or CODEAGENT_CONTAINER_MEMORY",
				shortID(c.id), d.opts.Memory, code)
		}
		// A container planagent stopped itself was killed by it: no wait.
		if code != 128+9 || try == oomSettleTries || c.stopping.Load() {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(step):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if res.Error != nil && res.Error.Message != "" {
		return code, fmt.Errorf("container %s exited with code %d: %s", shortID(c.id), code, res.Error.Message)
	}
	if code != 0 {
		return code, fmt.Errorf("container %s exited with code %d", shortID(c.id), code)
	}
	return 0, nil
}

// stopContainer stops c with the agent's grace, cut short when hurry
// closes, and removes it.
func (d *Docker) stopContainer(ctx context.Context, c *agentContainer, hurry <-chan struct{}) error {
	c.stopping.Store(true)
	grace := layout.StopGrace
	stopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-hurry: // no more grace: the forced removal below kills it
			cancel()
		case <-stopCtx.Done():
		}
	}()
	if _, err := d.api.ContainerStop(stopCtx, c.id, client.ContainerStopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) && stopCtx.Err() == nil {
		d.log.Warn("stop container; removing it by force", "container", shortID(c.id), "err", err)
	}
	err := d.removeContainer(ctx, c)
	if err == nil {
		d.log.Info("removed container", "container", shortID(c.id), "task", c.task, "attempt", c.attempt)
	}
	return err
}

// removeContainer force-removes the container and ends the goroutines that
// follow it. Not to be called from onExit (it waits for them).
func (d *Docker) removeContainer(ctx context.Context, c *agentContainer) error {
	err := d.forceRemove(ctx, c.id)
	c.cancel()
	c.wg.Wait()
	if err != nil {
		return fmt.Errorf("remove container %s: %w (remove it with `docker rm -f %s`)", shortID(c.id), err, shortID(c.id))
	}
	return nil
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// containerName is stable per run, volumes and parts, so `docker logs` is
// easy to type, and unique across volumes trees that share a run id.
func (d *Docker) containerName(parts ...string) string {
	sum := sha256.Sum256([]byte(d.opts.Volumes.Root))
	run := nameUnsafe.ReplaceAllString(d.opts.RunID, "-")
	if len(run) > 40 {
		run = run[:40]
	}
	name := "codeagent-" + run
	for _, p := range parts {
		name += "-" + nameUnsafe.ReplaceAllString(p, "-")
	}
	return name + "-" + hex.EncodeToString(sum[:4])
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// newLogTail streams a container's log into planagent's log: warnings and
// errors only unless Verbose, since task progress comes from the events files.
func (d *Docker) newLogTail() *lineTail {
	t := newLineTail(d.opts.Log, 20, d.opts.Env[config.APIKeyEnv])
	if !d.opts.Verbose {
		t.keep = agentlog.WarningsOnly
	}
	return t
}

// checkStatic refuses a codingagent that is not a Linux executable (a
// macOS build, say) or is dynamically linked: the images it is brought
// into need not have its C library.
func checkStatic(binary string, p platform) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("%w: %s is not a Linux executable (%w), and containers run Linux: build one with %s",
			agentbin.ErrNotFound, binary, err, p.crossBuild())
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: the docker runtime bind-mounts it into images without its C library; build it static with `make build` (CGO_ENABLED=0)", binary)
		}
	}
	return nil
}

// caBundle finds the host's CA certificates to lend to images without any.
func caBundle(configured string) string {
	switch configured {
	case "-":
		return ""
	case "":
	default:
		return configured
	}
	for _, p := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}
