package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// fakeEngine is the part of the Docker API the runtime uses, in memory.
// Each container "runs" until the test makes it exit (exit), Stop or a
// forced removal ends it; behave decides what a started container does.
type fakeEngine struct {
	mu         sync.Mutex
	createErr  error
	startErr   error
	behave     func(e *fakeEngine, id string) // called after a successful start
	containers map[string]*fakeContainer
	created    []client.ContainerCreateOptions
	removed    []string
	list       []containertypes.Summary
	// removeErr, by id: what ContainerRemove answers (after removing it,
	// as a removal already under way does a moment later).
	removeErr map[string]error
	// beforeCreate, when set, runs first in every ContainerCreate, outside
	// the engine's lock.
	beforeCreate func()
	n            int
	// removedWaits: the ids waited on with the condition "removed".
	removedWaits []string
}

type fakeContainer struct {
	opts   client.ContainerCreateOptions
	result chan containertypes.WaitResponse
	errs   chan error
	exited bool
	code   int
	oom    bool
	output string
}

func newFakeEngine() *fakeEngine { return &fakeEngine{containers: make(map[string]*fakeContainer)} }

func (e *fakeEngine) Ping(context.Context, client.PingOptions) (client.PingResult, error) {
	return client.PingResult{}, nil
}

func (e *fakeEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return client.ImageInspectResult{}, nil
}

func (e *fakeEngine) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return client.ContainerListResult{Items: slices.Clone(e.list)}, nil
}

func (e *fakeEngine) ContainerCreate(_ context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	if e.beforeCreate != nil {
		e.beforeCreate()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.createErr != nil {
		return client.ContainerCreateResult{}, e.createErr
	}
	e.n++
	id := fmt.Sprintf("c%02d0000000000000", e.n)
	e.containers[id] = &fakeContainer{opts: opts, result: make(chan containertypes.WaitResponse, 1), errs: make(chan error, 1)}
	e.created = append(e.created, opts)
	return client.ContainerCreateResult{ID: id}, nil
}

func (e *fakeEngine) ContainerWait(_ context.Context, id string, opts client.ContainerWaitOptions) client.ContainerWaitResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	if opts.Condition == containertypes.WaitConditionRemoved {
		e.removedWaits = append(e.removedWaits, id)
	}
	c, ok := e.containers[id]
	if !ok { // as the engine answers for a container already gone
		errs := make(chan error, 1)
		errs <- cerrdefs.ErrNotFound
		return client.ContainerWaitResult{Error: errs}
	}
	return client.ContainerWaitResult{Result: c.result, Error: c.errs}
}

func (e *fakeEngine) ContainerStart(_ context.Context, id string, _ client.ContainerStartOptions) (client.ContainerStartResult, error) {
	if e.startErr != nil {
		return client.ContainerStartResult{}, e.startErr
	}
	if e.behave != nil {
		e.behave(e, id)
	}
	return client.ContainerStartResult{}, nil
}

// exit ends container id with code (OOM-killed when oom) and output.
func (e *fakeEngine) exit(id string, code int, oom bool, output string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok || c.exited {
		return
	}
	c.exited, c.code, c.oom, c.output = true, code, oom, output
	c.result <- containertypes.WaitResponse{StatusCode: int64(code)}
}

// vanish is the engine going away mid-run: the wait ends in an error.
func (e *fakeEngine) vanish(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.containers[id].errs <- errors.New("connection reset by peer")
}

func (e *fakeEngine) ContainerLogs(_ context.Context, id string, _ client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var buf bytes.Buffer
	if c, ok := e.containers[id]; ok && c.exited {
		// The engine's multiplexed framing: stream 1 (stdout), big-endian size.
		buf.Write([]byte{1, 0, 0, 0})
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(c.output)))
		buf.WriteString(c.output)
	}
	return io.NopCloser(&buf), nil
}

func (e *fakeEngine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.containers[id]
	if !ok {
		return client.ContainerInspectResult{}, cerrdefs.ErrNotFound
	}
	var res client.ContainerInspectResult
	res.Container.State = &containertypes.State{ExitCode: c.code, OOMKilled: c.oom}
	return res, nil
}

func (e *fakeEngine) ContainerStop(_ context.Context, id string, _ client.ContainerStopOptions) (client.ContainerStopResult, error) {
	e.exit(id, 143, false, "")
	return client.ContainerStopResult{}, nil
}

func (e *fakeEngine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	e.exit(id, 137, false, "")
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.removeErr[id]; err != nil {
		delete(e.containers, id)
		return client.ContainerRemoveResult{}, err
	}
	if _, ok := e.containers[id]; !ok {
		return client.ContainerRemoveResult{}, cerrdefs.ErrNotFound
	}
	delete(e.containers, id)
	e.removed = append(e.removed, id)
	return client.ContainerRemoveResult{}, nil
}

// The exec calls serve the compose preflight only, which these tests do
// not reach: an engine that refuses them.
func (e *fakeEngine) ExecCreate(context.Context, string, client.ExecCreateOptions) (client.ExecCreateResult, error) {
	return client.ExecCreateResult{}, errors.New("fake engine: no exec")
}

func (e *fakeEngine) ExecAttach(context.Context, string, client.ExecAttachOptions) (client.ExecAttachResult, error) {
	return client.ExecAttachResult{}, errors.New("fake engine: no exec")
}

func (e *fakeEngine) ExecInspect(context.Context, string, client.ExecInspectOptions) (client.ExecInspectResult, error) {
	return client.ExecInspectResult{}, errors.New("fake engine: no exec")
}

// NetworkInspect: the fake's one network, the default bridge.
func (e *fakeEngine) NetworkInspect(_ context.Context, name string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	if name != "bridge" {
		return client.NetworkInspectResult{}, errNoSuchNetwork
	}
	var res client.NetworkInspectResult
	res.Network.IPAM.Config = []network.IPAMConfig{{Gateway: netip.MustParseAddr("127.0.0.1")}}
	return res, nil
}

var errNoSuchNetwork = errors.New("fake engine: no such network")

func (e *fakeEngine) DaemonHost() string { return "fake://engine" }
func (e *fakeEngine) Close() error       { return nil }

// live is the number of containers not yet removed.
func (e *fakeEngine) live() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.containers)
}

// fakeDocker is the runtime over fake, started, on fresh volumes with an
// attempt's copy for task t1 attempt 1.
func fakeDocker(t *testing.T, fake *fakeEngine) (*Docker, Attempt) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	// The key stays in Env (as a careless caller might leave it): the
	// gateway's token must replace it in every container all the same.
	gw := testGateway(t)
	d := &Docker{api: fake, opts: Options{Volumes: l, Image: "img:test", RunID: "r1", Binary: "/opt/codingagent",
		UID: 1000, GID: 1000, Env: map[string]string{"OPENAI_API_KEY": testKey}, Gateway: gw},
		log: slog.New(slog.DiscardHandler), exited: make(chan Exit, 16), attempts: make(map[string]*agentContainer),
		oomSettle: time.Millisecond}
	addr, err := gw.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.gatewayBase = d.gatewayURL("127.0.0.1", addr.Port)
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.WithoutCancel(t.Context())) })
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		cmd := &protocol.Command{ID: id, RunID: "r1", Attempt: 1, Title: "task " + id}
		if err := protocol.WriteCommand(l.CommandFile(id), cmd); err != nil {
			t.Fatal(err)
		}
	}
	a := Attempt{RunID: "r1", TaskID: "t1", Attempt: 1, Dir: l.Attempt("r1", "t1", 1), Rel: l.AttemptRel("r1", "t1", 1)}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return d, a
}

// writeReport writes, as the agent of task t1's attempt 1 would in its
// own volumes, a report saying it is of attempt.
func writeReport(t *testing.T, l volume.Layout, attempt int) {
	const task = "t1"
	t.Helper()
	own, err := volume.New(l.AttemptIO("r1", task, 1), "")
	if err != nil {
		t.Fatal(err)
	}
	rep := &protocol.Report{ID: task, RunID: "r1", Attempt: attempt, Status: protocol.StatusCompleted, Summary: "done"}
	if err := protocol.WriteReport(own.ReportFile(task), rep); err != nil {
		t.Fatal(err)
	}
}

// The error paths of an attempt's container: what Launch returns, what
// Exited says, and that no container is left behind.
func TestDockerFakeAttemptErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		createErr error
		startErr  error
		run       func(t *testing.T, e *fakeEngine, d *Docker, id string)
		launchErr string // "" = Launch succeeds
		exitErr   string // "" = nothing on Exited
	}{
		{name: "create fails", createErr: errors.New("no space left on device"), launchErr: "no space left on device"},
		{name: "image gone", createErr: cerrdefs.ErrNotFound, launchErr: "img:test not found"},
		{name: "start fails", startErr: errors.New("exec format error"), launchErr: "exec format error"},
		{name: "OOM", run: func(t *testing.T, e *fakeEngine, _ *Docker, id string) { e.exit(id, 137, true, "") },
			exitErr: "out of memory"},
		{name: "killed", run: func(t *testing.T, e *fakeEngine, _ *Docker, id string) { e.exit(id, 137, false, "") },
			exitErr: "exited with code 137"},
		{name: "engine gone mid-run", run: func(t *testing.T, e *fakeEngine, _ *Docker, id string) { e.vanish(id) },
			exitErr: "lost track of container"},
		{name: "exits after its report", run: func(t *testing.T, e *fakeEngine, d *Docker, id string) {
			writeReport(t, d.opts.Volumes, 1)
			e.exit(id, 0, false, "")
		}},
		{name: "exits 0 without its report", run: func(t *testing.T, e *fakeEngine, _ *Docker, id string) { e.exit(id, 0, false, "") },
			exitErr: "without a report"},
		{name: "a report of another attempt does not count", run: func(t *testing.T, e *fakeEngine, d *Docker, id string) {
			writeReport(t, d.opts.Volumes, 2)
			e.exit(id, 0, false, "")
		}, exitErr: "not of this attempt"},
		{name: "a report is not taken from an agent killed after it", run: func(t *testing.T, e *fakeEngine, d *Docker, id string) {
			writeReport(t, d.opts.Volumes, 1)
			e.exit(id, 137, false, "")
		}, exitErr: "taken only from an agent that ended normally"},
		{name: "a report dir swapped for a link is not followed", run: func(t *testing.T, e *fakeEngine, d *Docker, id string) {
			elsewhere := t.TempDir()
			writeReport(t, d.opts.Volumes, 1)
			own := d.opts.Volumes.AttemptIO("r1", "t1", 1)
			if err := os.Rename(filepath.Join(own, "reports"), filepath.Join(elsewhere, "reports")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(elsewhere, "reports"), filepath.Join(own, "reports")); err != nil {
				t.Fatal(err)
			}
			e.exit(id, 0, false, "")
		}, exitErr: "not followed"},
		{name: "a FIFO for a report does not block", run: func(t *testing.T, e *fakeEngine, d *Docker, id string) {
			own, _ := volume.New(d.opts.Volumes.AttemptIO("r1", "t1", 1), "")
			if err := syscall.Mkfifo(own.ReportFile("t1"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.exit(id, 0, false, "")
		}, exitErr: "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeEngine()
			fake.createErr, fake.startErr = tc.createErr, tc.startErr
			d, a := fakeDocker(t, fake)
			err := d.Launch(t.Context(), a)
			if tc.launchErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.launchErr) || !strings.Contains(err.Error(), "t1") {
					t.Fatalf("Launch = %v, want an error naming task t1 and %q", err, tc.launchErr)
				}
				if n := fake.live(); n != 0 {
					t.Errorf("%d containers left after a failed Launch", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Launch: %v", err)
			}
			tc.run(t, fake, d, firstID(fake))
			// An Exit that is due may take the OOM settle (a SIGKILLed
			// container is looked at again for a second); one that is
			// not would come at once.
			wait := 300 * time.Millisecond
			if tc.exitErr != "" {
				wait = 30 * time.Second
			}
			select {
			case ex := <-d.Exited():
				if tc.exitErr == "" {
					t.Fatalf("unexpected Exit %+v", ex)
				}
				if ex.TaskID != "t1" || ex.Err == nil || !strings.Contains(ex.Err.Error(), tc.exitErr) {
					t.Errorf("Exit = %+v, want task t1 and %q", ex, tc.exitErr)
				}
				if strings.Contains(ex.Err.Error(), testKey) {
					t.Errorf("the Exit leaks the API key: %v", ex.Err)
				}
			case <-time.After(wait):
				if tc.exitErr != "" {
					t.Fatalf("no Exit, want one with %q", tc.exitErr)
				}
			}
			poll.Until(t, 30*time.Second, "the attempt's container to be removed after it ended",
				func() bool { return fake.live() == 0 })
			_, err = os.Stat(d.opts.Volumes.ReportFile("t1"))
			if reported := err == nil; reported != (tc.exitErr == "") {
				t.Errorf("a report in reports/: %v, want %v", reported, tc.exitErr == "")
			}
			poll.Until(t, 30*time.Second, "the attempt's own volumes to be removed",
				func() bool { _, err := os.Lstat(d.opts.Volumes.AttemptIO("r1", "t1", 1)); return err != nil })
		})
	}
}

func firstID(e *fakeEngine) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id := range e.containers {
		return id
	}
	return ""
}

// The attempt's container: the configured image running the bind-mounted
// binary for that one task as the operator, with only its copy and the
// volumes it needs mounted, labelled for the leftover sweep, the gateway's
// URL and a token of its own in its environment, never the key.
func TestDockerFakeAttemptSpec(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	opts := fake.created[0]
	cfg := opts.Config
	if opts.Image != "img:test" || cfg.User != "1000:1000" {
		t.Errorf("image %q user %q", opts.Image, cfg.User)
	}
	wantWS := layout.VolumesDir + "/attempts/r1/t1.1"
	if got := strings.Join(append(cfg.Entrypoint, cfg.Cmd...), " "); got != layout.AgentBinary+" watch --task t1 --volumes "+layout.VolumesDir+" --workspace "+wantWS {
		t.Errorf("command = %q", got)
	}
	l := d.opts.Volumes
	own, _ := volume.New(l.AttemptIO("r1", "t1", 1), "")
	want := map[string]string{
		layout.AgentBinary:                     "/opt/codingagent",
		layout.VolumesDir:                      own.Root,
		layout.VolumesDir + "/context/project": own.ProjectContext(),
		layout.VolumesDir + "/context/task/t1": own.TaskContext("t1"),
		wantWS:                                 a.Dir,
	}
	readOnly := map[string]bool{layout.AgentBinary: true, layout.VolumesDir + "/context/project": true, layout.VolumesDir + "/context/task/t1": true}
	for _, m := range opts.HostConfig.Mounts {
		if m.Target == agentCABundle {
			if !m.ReadOnly {
				t.Error("the CA bundle is mounted writable")
			}
			continue
		}
		if want[m.Target] != m.Source {
			t.Errorf("unexpected mount %s -> %s", m.Source, m.Target)
		}
		if readOnly[m.Target] != m.ReadOnly {
			t.Errorf("mount %s read-only = %v", m.Target, m.ReadOnly)
		}
		delete(want, m.Target)
	}
	if len(want) > 0 {
		t.Errorf("missing mounts: %v", want)
	}
	for k, v := range map[string]string{layout.LabelManaged: "true", layout.LabelRun: "r1", layout.LabelTask: "t1", layout.LabelAttempt: "1", layout.LabelRole: "attempt", layout.LabelVolumes: l.Root} {
		if cfg.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Labels[k], v)
		}
	}
	for _, v := range cfg.Labels {
		if strings.Contains(v, testKey) {
			t.Error("a label holds the API key")
		}
	}
	env := strings.Join(cfg.Env, "\n")
	for _, want := range []string{"HOME=/tmp", "OPENAI_BASE_URL=" + d.gatewayBase, "GIT_CONFIG_KEY_0=safe.directory"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	if strings.Contains(env, testKey) {
		t.Error("the API key is in the container's environment: the gateway's token belongs there")
	}
	if tok := envValue(cfg.Env, "OPENAI_API_KEY"); len(tok) != 64 {
		t.Errorf("OPENAI_API_KEY = %q, want the attempt's 64-hex gateway token", tok)
	}
	if opts.HostConfig.Init == nil || *opts.HostConfig.Init {
		t.Error("the engine may put an init before codingagent: it must be the container's first process (the fence)")
	}
	if !slices.Equal(opts.HostConfig.CapDrop, []string{"ALL"}) {
		t.Errorf("CapDrop = %v", opts.HostConfig.CapDrop)
	}
}

// Stop removes every attempt's container at once, reports none of them as
// died, and Launch afterwards needs a new Start.
func TestDockerFakeStopRemovesAttempts(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	b := a
	b.TaskID, b.Dir, b.Rel = "t2", d.opts.Volumes.Attempt("r1", "t2", 1), d.opts.Volumes.AttemptRel("r1", "t2", 1)
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, at := range []Attempt{a, b} {
		if err := d.Launch(t.Context(), at); err != nil {
			t.Fatal(err)
		}
	}
	if n := fake.live(); n != 2 {
		t.Fatalf("%d containers, want one per attempt", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Ctrl-C: Stop gets a cancelled context
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := fake.live(); n != 0 {
		t.Errorf("%d containers left after Stop", n)
	}
	if _, err := os.Lstat(d.opts.Volumes.IO()); err == nil {
		t.Error("the attempts' own volumes stayed after Stop")
	}
	select {
	case ex := <-d.Exited():
		t.Errorf("Stop reported %+v as died", ex)
	case <-time.After(100 * time.Millisecond):
	}
	if err := d.Launch(t.Context(), a); err == nil || !strings.Contains(err.Error(), "before Start") {
		t.Errorf("Launch after Stop = %v, want an error asking for Start", err)
	}
}

// Attempts of one task run side by side (best-of-N): a second attempt's
// launch leaves the first one's container running; abandoning one removes
// only its own; the same attempt launched again replaces its container,
// which is not reported as died.
func TestDockerFakeAttemptsOfATaskRunSideBySide(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	b := a
	b.Attempt = 2
	b.Dir, b.Rel = d.opts.Volumes.Attempt("r1", "t1", 2), d.opts.Volumes.AttemptRel("r1", "t1", 2)
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if n := fake.live(); n != 2 || len(fake.removed) != 0 {
		t.Fatalf("live %d removed %v, want both attempts' containers running", n, fake.removed)
	}
	if err := d.Launch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if n := fake.live(); n != 2 || len(fake.removed) != 1 {
		t.Errorf("live %d removed %v, want attempt 2's first container replaced, attempt 1's running", n, fake.removed)
	}
	if err := d.Abandon(t.Context(), a.TaskID, 1); err != nil {
		t.Fatal(err)
	}
	if n := fake.live(); n != 1 || len(fake.removed) != 2 {
		t.Errorf("live %d removed %v, want attempt 1 removed, attempt 2 running", n, fake.removed)
	}
	d.mu.Lock()
	_, two := d.attempts[b.Name()]
	d.mu.Unlock()
	if !two {
		t.Error("attempt 2 is no longer followed after attempt 1 was abandoned")
	}
	select {
	case ex := <-d.Exited():
		t.Errorf("a replaced or abandoned attempt was reported as died: %+v", ex)
	case <-time.After(100 * time.Millisecond):
	}
}

// A timed-out attempt is abandoned: its container goes at once, is not
// reported as died, and abandoning it again (or a task never launched) is
// no error.
func TestDockerFakeAbandonRemovesTheAttempt(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	d, a := fakeDocker(t, fake)
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := d.Abandon(t.Context(), a.TaskID, a.Attempt); err != nil {
		t.Fatal(err)
	}
	if n := fake.live(); n != 0 || len(fake.removed) != 1 {
		t.Errorf("live %d removed %v, want the attempt's container removed", n, fake.removed)
	}
	select {
	case ex := <-d.Exited():
		t.Errorf("the abandoned attempt was reported as died: %+v", ex)
	case <-time.After(100 * time.Millisecond):
	}
	for _, id := range []string{a.TaskID, "never-launched"} {
		if err := d.Abandon(t.Context(), id, a.Attempt); err != nil {
			t.Errorf("abandon %s again: %v", id, err)
		}
	}
}

// Exec's error paths and results, in a fresh container each time.
func TestDockerFakeExec(t *testing.T) {
	tests := []struct {
		name      string
		createErr error
		behave    func(e *fakeEngine, id string)
		timeout   time.Duration
		want      ExecResult
		wantErr   string
	}{
		{name: "passes", behave: func(e *fakeEngine, id string) { e.exit(id, 0, false, "ok\n") }, want: ExecResult{Output: "ok\n"}},
		{name: "fails with its code", behave: func(e *fakeEngine, id string) { e.exit(id, 3, false, "FAIL "+testKey+"\n") },
			want: ExecResult{Output: "FAIL [redacted]\n", ExitCode: 3}},
		{name: "create fails", createErr: errors.New("engine says no"), wantErr: "engine says no"},
		{name: "engine gone", behave: func(e *fakeEngine, id string) { e.vanish(id) }, wantErr: "lost track"},
		{name: "times out", behave: func(*fakeEngine, string) {}, timeout: 50 * time.Millisecond,
			want: ExecResult{Output: "\n[command timed out after 50ms]", ExitCode: layout.TimeoutExitCode}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeEngine()
			fake.createErr = tc.createErr
			fake.behave = func(e *fakeEngine, id string) { go tc.behave(e, id) }
			d, a := fakeDocker(t, fake)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			got, err := d.Exec(t.Context(), a.Dir, "go test ./...", timeout)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Exec = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("Exec = %+v, %v; want %+v", got, err, tc.want)
			}
			if n := fake.live(); n != 0 {
				t.Errorf("%d containers left after Exec", n)
			}
			if len(fake.created) == 1 {
				c := fake.created[0].Config
				if c.WorkingDir != layout.VolumesDir+"/attempts/r1/t1.1" || strings.Contains(strings.Join(c.Env, " "), "OPENAI_API_KEY") {
					t.Errorf("exec container: workdir %q env %v", c.WorkingDir, c.Env)
				}
			}
		})
	}
	fake := newFakeEngine()
	d, _ := fakeDocker(t, fake)
	if _, err := d.Exec(t.Context(), t.TempDir(), "true", time.Second); err == nil || !strings.Contains(err.Error(), "neither the workspace nor under") {
		t.Errorf("Exec outside the volumes = %v", err)
	}
}

// Start removes the containers a crashed planagent left serving these
// volumes, and with them their claims and heartbeats, so a resumed run
// sends their tasks again at once; another host's claim stays.
func TestDockerFakeLeftoverClaimsFreed(t *testing.T) {
	t.Parallel()
	fake := newFakeEngine()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	dead := "0123456789ab" + strings.Repeat("f", 52)
	fake.list = []containertypes.Summary{{ID: dead, State: containertypes.StateRunning,
		Labels: map[string]string{layout.LabelManaged: "true", layout.LabelVolumes: l.Root, layout.LabelRun: "r0"}}}
	files := map[string]string{
		filepath.Join(l.Claimed(), "t1.md"):         "the command",
		filepath.Join(l.Claimed(), "t1.owner.json"): `{"watcher":"w1","host":"0123456789ab"}`,
		filepath.Join(l.Claimed(), "t2.md"):         "the command",
		filepath.Join(l.Claimed(), "t2.owner.json"): `{"watcher":"w2","host":"elsewhere"}`,
		filepath.Join(l.Watchers(), "w1.json"):      `{"id":"w1","host":"0123456789ab"}`,
		filepath.Join(l.Watchers(), "w2.json"):      `{"id":"w2","host":"elsewhere"}`,
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := &Docker{api: fake, opts: Options{Volumes: l, Image: "img:test", RunID: "r1", Binary: "/opt/codingagent", UID: 1000, GID: 1000},
		log: slog.New(slog.DiscardHandler), exited: make(chan Exit, 16), attempts: make(map[string]*agentContainer)}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.WithoutCancel(t.Context())) })
	for p := range files {
		_, err := os.Stat(p)
		gone := strings.Contains(p, "t1.") || strings.HasSuffix(p, "w1.json")
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: gone %v, want %v", filepath.Base(p), os.IsNotExist(err), gone)
		}
	}
}
