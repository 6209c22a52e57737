package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/go-units"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
)

var (
	// ErrEngineUnreachable: no Docker engine answers at DOCKER_HOST (or the default socket).
	ErrEngineUnreachable = errors.New("docker engine not reachable")
	// ErrImageMissing: the codingagent image is not in the engine's local store.
	ErrImageMissing = errors.New("codingagent image missing")
	// ErrWorkspaceMismatch: a compose watcher serves the volumes but mounts another workspace.
	ErrWorkspaceMismatch = errors.New("compose watcher works in another workspace")
)

// DefaultImage is what `make image` (scripts/image.sh) tags.
const DefaultImage = "codeagent/codingagent:latest"

// Labels on every container this backend creates, so a later run can find
// and remove the leftovers of a crashed one.
const (
	LabelManaged = "codeagent.managed"
	LabelRun     = "codeagent.run"
	LabelVolumes = "codeagent.volumes"
)

// DockerOptions configures the Docker backend. Zero values mean "no limit"
// for Memory, CPUs and Pids, and the engine's default network for Network.
type DockerOptions struct {
	Volumes volume.Layout
	Image   string
	RunID   string
	Memory  string // e.g. "2g"; swap is disabled (MemorySwap = Memory)
	CPUs    float64
	Pids    int64
	Network string
	// Env holds the OPENAI_* settings. Values go into the container's
	// environment only: never into labels, logs or errors.
	Env map[string]string
	// UID and GID the container runs as; the operator's own ids make the
	// files the agent writes into the bind mounts belong to the operator.
	UID, GID int
	Logger   *slog.Logger
	Log      io.Writer // container logs (stdout and stderr), line by line
	Verbose  bool      // stream INFO log lines too, not only warnings and errors
}

// containerAPI is the part of *client.Client this backend uses.
type containerAPI interface {
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerWait(ctx context.Context, id string, options client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerLogs(ctx context.Context, id string, options client.ContainerLogsOptions) (client.ContainerLogsResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerStop(ctx context.Context, id string, options client.ContainerStopOptions) (client.ContainerStopResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ExecCreate(ctx context.Context, id string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)
	DaemonHost() string
	Close() error
}

var _ containerAPI = (*client.Client)(nil)

// Docker runs the codingagent watcher in a container, or reuses a watcher
// that `docker compose up` already runs on the same volumes.
type Docker struct {
	api    containerAPI
	opts   DockerOptions
	memory int64
	log    *slog.Logger

	mu     sync.Mutex
	target string            // container Exec runs in: ours or compose's
	run    *watcherContainer // nil when reusing a watcher we did not start
}

// watcherContainer is one container this backend created and watches.
type watcherContainer struct {
	id       string
	exited   chan error    // buffered: the unexpected exit, for Exited()
	done     chan struct{} // closed once the container has exited
	exitErr  error         // set before done is closed
	logsDone chan struct{} // closed when the log stream ends
	tail     *lineTail
	stopping atomic.Bool
	cancel   context.CancelFunc // ends the wait and log streams
	wg       sync.WaitGroup
}

var _ Runtime = (*Docker)(nil)

// NewDocker connects to the engine named by the environment (DOCKER_HOST,
// DOCKER_API_VERSION, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY) and checks that
// the image is present. It creates nothing; Start does.
func NewDocker(ctx context.Context, opts DockerOptions) (*Docker, error) {
	if opts.RunID == "" {
		return nil, errors.New("docker runtime: empty run id: the orchestrator must pass the run's id")
	}
	if opts.Volumes.Root == "" {
		return nil, errors.New("docker runtime: no volumes dir: pass --volumes")
	}
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	var memory int64
	if opts.Memory != "" {
		m, err := units.RAMInBytes(opts.Memory)
		if err != nil || m <= 0 {
			return nil, fmt.Errorf("memory limit %q: use a size such as 2g or 512m", opts.Memory)
		}
		memory = m
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: docker client settings (DOCKER_HOST=%s): %w", ErrEngineUnreachable, envHost(), err)
	}
	d := &Docker{api: cli, opts: opts, memory: memory, log: logger.With("runtime", "docker")}
	if err := d.connect(ctx); err != nil {
		_ = cli.Close()
		return nil, err
	}
	// Checked here too, not only in Start: a watcher in the wrong workspace
	// is a configuration error, reported before the run plans anything.
	if _, err := d.composeWatcher(ctx); err != nil {
		_ = cli.Close()
		return nil, err
	}
	return d, nil
}

func envHost() string {
	if h := os.Getenv(client.EnvOverrideHost); h != "" {
		return h
	}
	return "unset"
}

// connect pings with version negotiation first, so an unreachable or too old
// engine is reported before anything else, then checks the image.
func (d *Docker) connect(ctx context.Context) error {
	if _, err := d.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		if cerrdefs.IsInvalidArgument(err) {
			return fmt.Errorf("docker engine at %s is too old for this client (needs API %s or newer, Docker 19.03+): %w",
				d.api.DaemonHost(), client.MinAPIVersion, err)
		}
		return fmt.Errorf("%w at %s: is it running? (DOCKER_HOST=%s; Docker CLI contexts are not read) — or use --runtime local: %w",
			ErrEngineUnreachable, d.api.DaemonHost(), envHost(), err)
	}
	if _, err := d.api.ImageInspect(ctx, d.opts.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: image %s not found: run `make image` to build it (no registry is used)", ErrImageMissing, d.opts.Image)
		}
		return fmt.Errorf("inspect image %s: %w", d.opts.Image, err)
	}
	return nil
}

func (d *Docker) Name() string { return "docker" }

// Start removes leftovers of earlier runs, then reuses a compose watcher on
// the same volumes or starts a container and waits for its first heartbeat.
func (d *Docker) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.forgetDeadContainer(ctx); err != nil {
		return err
	}
	if d.target != "" {
		return errors.New("docker runtime already started: Stop it before starting again")
	}
	if err := d.removeLeftovers(ctx); err != nil {
		return err
	}
	id, err := d.composeWatcher(ctx)
	if err != nil {
		return err
	}
	if id != "" {
		d.log.Info("reusing the compose codingagent watcher", "container", shortID(id))
		d.target = id
		return nil
	}
	run, err := d.startContainer(ctx)
	if err != nil {
		return err
	}
	d.run, d.target = run, run.id
	return nil
}

// forgetDeadContainer removes the container of an earlier Start that has
// exited, so that Start after Exited() (the orchestrator's restart of a dead
// watcher) creates a fresh one instead of refusing as "already started".
func (d *Docker) forgetDeadContainer(ctx context.Context) error {
	run := d.run
	if run == nil {
		return nil
	}
	select {
	case <-run.done:
	default:
		return nil
	}
	run.stopping.Store(true)
	rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopDeadline)
	defer cancel()
	if err := d.removeContainer(rmCtx, run); err != nil {
		return err
	}
	d.log.Info("removed the exited codingagent container", "container", shortID(run.id))
	d.run, d.target = nil, ""
	return nil
}

// Exited is nil before Start and when a compose watcher is reused.
func (d *Docker) Exited() <-chan error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.run == nil {
		return nil
	}
	return d.run.exited
}

// Stop stops (15s grace, so the watcher can report interrupted tasks) and
// removes the container Start created. It never touches a compose watcher.
func (d *Docker) Stop(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	run := d.run
	d.run, d.target = nil, ""
	if run == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopDeadline)
	defer cancel()
	return d.stopContainer(ctx, run)
}

// Close releases the engine connection; call it after Stop.
func (d *Docker) Close() error { return d.api.Close() }
