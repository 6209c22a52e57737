package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/go-units"
	"github.com/moby/moby/client"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

var (
	// ErrEngineUnreachable: no Docker engine answers at DOCKER_HOST (or the default socket).
	ErrEngineUnreachable = errors.New("docker engine not reachable")
	// ErrImageMissing: the image the agents run in is not in the engine's local store.
	ErrImageMissing = errors.New("image missing")
	// ErrWorkspaceMismatch: a compose watcher serves the volumes but mounts another workspace.
	ErrWorkspaceMismatch = errors.New("compose watcher works in another workspace")
)

// Options configures the Docker backend. Zero values mean "no limit"
// for Memory, CPUs and Pids, and the engine's default network for Network.
type Options struct {
	Volumes volume.Layout
	// Image is what each attempt's container and each acceptance command
	// runs in: any image with /bin/sh (default DefaultImage).
	Image string
	RunID string
	// Binary is the static codingagent bind-mounted into every container;
	// "" finds it next to Executable or on PATH.
	Binary     string
	Executable string
	// CABundle is the host's CA certificates, mounted read-only for an
	// https model URL in an image without any; "" looks in the usual
	// places, "-" mounts none.
	CABundle string
	Memory   string // e.g. "2g"; swap is disabled (MemorySwap = Memory)
	CPUs     float64
	Pids     int64
	Network  string
	// Env holds the OPENAI_* settings. Values go into the container's
	// environment only: never into labels, logs or errors.
	Env map[string]string
	// Gateway, when set, serves the model API to the attempts: each
	// attempt's container gets a token of its own (revoked when the
	// attempt ends) and the gateway's URL in place of Env's API key and
	// base URL, so the key is in no container. A compose watcher has the
	// compose gateway service's token instead (docker-compose.yml).
	Gateway Gateway
	// Egress is what the attempts may reach besides the model gateway:
	// nil or `egress: open` is the engine's network as configured
	// (Network); anything else gives each container no network and the
	// gateway and an egress proxy admitting only the policy's hosts
	// (docker_net.go).
	Egress *egress.Policy
	// EgressRefused hears of every request the egress proxy turned away,
	// with the task and attempt it came from; it must not block.
	EgressRefused func(task string, attempt int, r egress.Refusal)
	// Key is the provider's key, which the boundary probe looks for in a
	// container's environment: it is compared, never sent or shown.
	Key string
	// UID and GID the container runs as; the operator's own ids make the
	// files the agent writes into the bind mounts belong to the operator.
	UID, GID int
	Logger   *slog.Logger
	Log      io.Writer // container logs (stdout and stderr), line by line
	Verbose  bool      // stream INFO log lines too, not only warnings and errors
	// Preflight checks, before the run, that the model server answers from
	// inside a container like the agent's.
	Preflight bool
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
	// NetworkInspect finds where the containers reach the model gateway.
	NetworkInspect(ctx context.Context, network string, options client.NetworkInspectOptions) (client.NetworkInspectResult, error)
	// The exec calls serve the model preflight in a compose watcher only.
	ExecCreate(ctx context.Context, id string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)
	DaemonHost() string
	Close() error
}

var _ containerAPI = (*client.Client)(nil)

// Docker runs each task attempt in a container of its own, from any image,
// with the codingagent binary bind-mounted into it: the container sees the
// attempt's copy of the workspace and the volumes it needs, runs
// `codingagent watch --task ID` and is removed when the attempt ends. A
// watcher that `docker compose up` runs on the same volumes is reused
// instead (Launch does nothing then).
type Docker struct {
	api    containerAPI
	opts   Options
	engine string // where the engine address came from, for messages
	memory int64
	log    *slog.Logger
	ca     string    // host CA bundle mounted into containers, or ""
	exited chan Exit // attempts that died without a report
	// gatewayBase is the model gateway's base URL as the containers reach
	// it; "" without a gateway.
	gatewayBase string
	// egress is the allow-list of a closed network with what planagent's
	// own services add (ownEgress); nil when open.
	egress *egress.Policy
	// boundary is what the start-of-run probe found.
	boundary boundary.Verdict
	// oomSettle is exitError's wait between looks for a late OOM event;
	// 0 is oomSettleStep. The fake engine's tests shorten it: its OOM
	// mark is never late, so the full second would only be waited out.
	oomSettle time.Duration

	mu       sync.Mutex
	started  bool
	compose  string                     // the reused compose watcher, or ""
	refusals *composeRefusals           // its gateway's refusals file, followed (docker_refusals.go)
	attempts map[string]*agentContainer // by attempt (Name: "task.n"): a task may run several at once
	// ending: containers of attempts that ended on their own, being
	// removed off the map; Stop waits for them so a run leaves none.
	ending sync.WaitGroup
}

// New connects to the engine named by the environment (DOCKER_HOST,
// DOCKER_API_VERSION, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY) or the Docker
// CLI's current context (dockercontext.go), finds the
// codingagent binary and checks that the image is present. It creates
// nothing but the short-lived preflight container.
func New(ctx context.Context, opts Options) (*Docker, error) {
	d, err := newDocker(opts)
	if err != nil {
		return nil, err
	}
	eng, err := resolveEngine(os.Getenv) // dockercontext.go: DOCKER_HOST or the CLI's context
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEngineUnreachable, err)
	}
	// The client would trace every engine API call once traces are on; the
	// run's trace holds the agents' work only (cleanup calls would even
	// start traces of their own).
	cli, err := client.New(append(eng.opts, client.WithTraceProvider(noop.NewTracerProvider()))...)
	if err != nil {
		return nil, fmt.Errorf("%w: docker client settings (%s): %w", ErrEngineUnreachable, eng.describe, err)
	}
	d.api, d.engine = cli, eng.describe
	if err := d.connect(ctx); err != nil {
		_ = cli.Close()
		return nil, err
	}
	if err := d.findBinary(); err != nil {
		_ = cli.Close()
		return nil, err
	}
	// Checked here too, not only in Start: a watcher in the wrong workspace
	// is a configuration error, reported before the run plans anything.
	compose, err := d.composeWatcher(ctx)
	// Even when a compose watcher serves now: it may be gone at Start,
	// and the attempts' containers then need the gateway.
	switch {
	case err != nil:
	case d.closed() && opts.Gateway != nil:
		// No listener on any network: each container gets the gateway's
		// socket (docker_net.go).
		d.gatewayBase = "http://" + relayGateway + opts.Gateway.Path()
	case opts.Gateway != nil:
		d.gatewayBase, err = d.listenGateway(ctx) // gateway.go
	}
	if err == nil && opts.Preflight {
		err = d.preflight(ctx, compose) // preflight.go
	}
	if err == nil && opts.Preflight {
		err = d.checkBoundary(ctx, compose)
	}
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return d, nil
}

// newDocker checks the options; the engine and the binary come later.
func newDocker(opts Options) (*Docker, error) {
	if opts.RunID == "" {
		return nil, errors.New("docker runtime: empty run id: the orchestrator must pass the run's id")
	}
	if opts.Volumes.Root == "" {
		return nil, errors.New("docker runtime: no volumes dir: pass --volumes")
	}
	if opts.Image == "" {
		opts.Image = layout.DefaultImage
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
	if opts.Log != nil {
		opts.Log = &output.LockedWriter{W: opts.Log} // one log, many containers
	}
	var policy *egress.Policy
	if opts.Egress != nil && !opts.Egress.IsOpen() {
		switch opts.Network {
		case "", "default", "bridge", "none":
		default:
			return nil, fmt.Errorf("network %q: with egress closed each container gets no network (only planagent's gateway and egress proxy); set egress: open to run the attempts on network %s", opts.Network, opts.Network)
		}
		p, err := ownEgress(opts.Egress, opts.Env, opts.Gateway != nil)
		if err != nil {
			return nil, err
		}
		policy = p
	}
	return &Docker{opts: opts, memory: memory, egress: policy, log: logger.With("runtime", "docker"), ca: caBundle(opts.CABundle),
		exited: make(chan Exit, 16), attempts: make(map[string]*agentContainer)}, nil
}

// connect pings with version negotiation first, so an unreachable or too old
// engine is reported before anything else, then checks the image.
func (d *Docker) connect(ctx context.Context) error {
	if _, err := d.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		if cerrdefs.IsInvalidArgument(err) {
			return fmt.Errorf("docker engine at %s is too old for this client (needs API %s or newer, Docker 19.03+): %w",
				d.api.DaemonHost(), client.MinAPIVersion, err)
		}
		return fmt.Errorf("%w at %s: is it running? (%s) — or use --runtime local: %w",
			ErrEngineUnreachable, d.api.DaemonHost(), d.engine, err)
	}
	if _, err := d.api.ImageInspect(ctx, d.opts.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return d.imageMissing()
		}
		return fmt.Errorf("inspect image %s: %w", d.opts.Image, err)
	}
	return nil
}

// findBinary finds the codingagent to bind-mount and checks it is static.
func (d *Docker) findBinary() error {
	if d.opts.Binary == "" {
		b, err := findContainerCodingAgent(d.opts.Executable, hostPlatform())
		if err != nil {
			return err
		}
		d.opts.Binary = b
	}
	// The engine bind-mounts the file itself, not a link to it.
	if real, err := filepath.EvalSymlinks(d.opts.Binary); err == nil {
		d.opts.Binary = real
	}
	if abs, err := filepath.Abs(d.opts.Binary); err == nil {
		d.opts.Binary = abs
	}
	return checkStatic(d.opts.Binary, hostPlatform())
}

func (d *Docker) imageMissing() error {
	if d.opts.Image == layout.DefaultImage {
		return fmt.Errorf("%w: image %s not found: run `make image` to build it, or pass --image with any local image that has /bin/sh (no registry is used)", ErrImageMissing, d.opts.Image)
	}
	return fmt.Errorf("%w: image %s not found in the engine's local store: `docker pull` or build it first (planagent never pulls)", ErrImageMissing, d.opts.Image)
}

// Start is the preflight of a run: it removes the containers crashed runs
// left on these volumes, then reuses a compose watcher on the same volumes
// when one is up. Containers come with Launch.
func (d *Docker) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.removeLeftovers(ctx); err != nil {
		return err
	}
	id, err := d.composeWatcher(ctx)
	if err != nil {
		return err
	}
	if id != "" && d.compose != id && d.opts.Log != nil {
		// Said without -v: tasks go to a container this run did not start.
		fmt.Fprintf(d.opts.Log, "using the compose codingagent watcher %s (docker compose up) on %s: one container for every attempt, not fenced per attempt (a trusted-model mode; stop it for a container per attempt)\n", shortID(id), d.opts.Volumes.Root)
	}
	d.compose, d.started = id, true
	if id != "" {
		d.followRefusals()
	}
	return nil
}

// Exited delivers attempts whose container ended without their report; nil
// when a compose watcher is reused (its death shows as a stale heartbeat).
func (d *Docker) Exited() <-chan Exit {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.compose != "" {
		return nil
	}
	return d.exited
}

// Stop stops (15s grace, so each agent can report its task interrupted)
// and removes every attempt's container, all at once. It never touches a
// compose watcher.
func (d *Docker) Stop(ctx context.Context) error {
	d.mu.Lock()
	running := make([]*agentContainer, 0, len(d.attempts))
	for _, c := range d.attempts {
		running = append(running, c)
	}
	clear(d.attempts)
	d.compose, d.started = "", false
	d.mu.Unlock()
	// A cancelled ctx (a second Ctrl-C) cuts the agents' grace short; the
	// containers are removed either way.
	hurry := ctx.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	defer cancel()
	errs := make([]error, len(running))
	var wg sync.WaitGroup
	for i, c := range running {
		wg.Go(func() {
			if errs[i] = d.stopContainer(ctx, c, hurry); errs[i] == nil {
				// Its "interrupted" report, for a resume.
				d.fenced(c, true)
			} else if c.unfollow != nil {
				c.unfollow() // its gateway token ends with the run all the same
			}
		})
	}
	wg.Wait()
	d.ending.Wait()
	d.endRefusals()
	// The run's own-volumes dirs are gone with their containers; the
	// directory of the run too unless one could not be fenced.
	_ = os.Remove(filepath.Join(d.opts.Volumes.IO(), d.opts.RunID))
	_ = os.Remove(d.opts.Volumes.IO())
	return errors.Join(errs...)
}

// Close releases the engine connection; call it after Stop.
func (d *Docker) Close() error { return d.api.Close() }
