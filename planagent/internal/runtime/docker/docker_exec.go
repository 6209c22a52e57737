package docker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/envfault"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

const (
	// execKillAfter is how long a timed-out command in the compose
	// watcher gets after SIGTERM.
	execKillAfter = 5
)

// Exec runs command with /bin/sh -c in a fresh container of the agents'
// image, with dir mounted where the agent sees it (the default workspace
// or a copy under attempts/) as working directory, as the operator's uid,
// and returns its combined output and exit code. The container has none
// of the model settings: acceptance commands don't need them and their
// output is shown to people and to the LLM. It is removed afterwards.
//
// Under closed egress the container has no network, like an attempt's,
// and reaches what the run's allow-list names through the egress proxy:
// `codingagent relay` is its first process and runs the command as its
// child, so exit code and output are the command's. There is no model
// gateway. Refusals are reported under the task and attempt whose copy dir
// is (volume.Layout.AttemptOf); in the shared workspace (a run without
// checkpoints) they are the run's, with no task.
//
// With a compose watcher serving the volumes the command runs in it
// instead (docker exec), as the compose user set it up.
func (d *Docker) Exec(ctx context.Context, dir, command string, timeout time.Duration) (ExecResult, error) {
	d.mu.Lock()
	compose := d.compose
	d.mu.Unlock()
	if compose != "" {
		return d.execInCompose(ctx, compose, dir, command, timeout)
	}
	workdir, err := d.containerPath(dir)
	if err != nil {
		return ExecResult{}, err
	}
	if timeout <= 0 {
		timeout = layout.ExecDefaultTimeout
	}
	s := spec{
		role:       "exec",
		entrypoint: []string{"/bin/sh", "-c", command},
		cmd:        []string{},
		workdir:    workdir,
		mounts:     []mount.Mount{{Type: mount.TypeBind, Source: dir, Target: workdir}},
	}
	task, attempt, _ := d.opts.Volumes.AttemptOf(d.opts.RunID, dir)
	way, err := d.openNet(netExec, task, attempt)
	if err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, err)
	}
	// Deferred first, so it runs last: the sockets outlive the container.
	defer way.close()
	if way != nil {
		s.entrypoint = append([]string{layout.AgentBinary, "relay", "--"}, s.entrypoint...)
		s.env = envList(relayEnv(false))
		s.mounts = append(s.mounts, way.mounts()...)
	}
	c, err := d.runContainer(ctx, s, nil)
	if err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, engineFault(err))
	}
	defer func() {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer cancel()
		c.stopping.Store(true)
		if err := d.removeContainer(rmCtx, c); err != nil {
			d.log.Warn("remove the acceptance command's container", "container", shortID(c.id), "err", err)
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut := false
	select {
	case <-c.done:
	case <-ctx.Done():
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q in container %s: %w", command, shortID(c.id), ctx.Err())
	case <-timer.C:
		timedOut = true
		grace := 0
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		_, err := d.api.ContainerStop(stopCtx, c.id, client.ContainerStopOptions{Timeout: &grace})
		cancel()
		if err != nil && !cerrdefs.IsNotFound(err) {
			return ExecResult{ExitCode: -1}, fmt.Errorf("kill the timed-out acceptance command %q: %w", command, engineFault(err))
		}
		<-c.done
	}
	if c.code < 0 && errors.Is(c.exitErr, envfault.ErrEngine) {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, c.exitErr)
	}
	output, err := d.containerOutput(ctx, c)
	if err != nil {
		return ExecResult{Output: output, ExitCode: -1}, engineFault(err)
	}
	if timedOut {
		return ExecResult{Output: output + fmt.Sprintf("\n[command timed out after %s]", timeout), ExitCode: layout.TimeoutExitCode}, nil
	}
	if c.code < 0 {
		return ExecResult{Output: output, ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, c.exitErr)
	}
	return ExecResult{Output: output, ExitCode: c.code}, nil
}

// execInCompose runs command with sh -c in the compose watcher, in dir as
// that container sees it, as its user, with composeExecEnv. The engine cannot kill an exec'd process, so timeout(1) in
// the container does.
func (d *Docker) execInCompose(ctx context.Context, id, dir, command string, timeout time.Duration) (ExecResult, error) {
	workdir, err := d.containerPath(dir)
	if err != nil {
		return ExecResult{}, err
	}
	workdir = composeVolumes + strings.TrimPrefix(workdir, layout.VolumesDir)
	cmd := []string{"sh", "-c", command}
	if timeout > 0 {
		secs := strconv.Itoa(int(math.Ceil(timeout.Seconds())))
		cmd = append([]string{"timeout", "-k", strconv.Itoa(execKillAfter), secs}, cmd...)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout+(execKillAfter+5)*time.Second)
		defer cancel()
	}
	env, err := d.composeExecEnv(ctx, id, dir)
	if err != nil {
		return ExecResult{}, err
	}
	started := time.Now()
	created, err := d.api.ExecCreate(ctx, id, client.ExecCreateOptions{
		AttachStdout: true, AttachStderr: true, WorkingDir: workdir, Env: env, Cmd: cmd,
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("create exec in the compose watcher %s: %w", shortID(id), err)
	}
	attached, err := d.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("attach to exec in the compose watcher %s: %w", shortID(id), err)
	}
	// Closing the connection is the only way to unblock the read on cancel.
	stop := context.AfterFunc(ctx, attached.Close)
	out := &output.Tail{Limit: layout.ExecOutputCap}
	_, copyErr := stdcopy.StdCopy(out, out, attached.Reader)
	stop()
	attached.Close()
	output := output.Redact(out.String(), d.opts.Env[config.APIKeyEnv])
	if ctx.Err() != nil {
		return ExecResult{Output: output, ExitCode: -1}, fmt.Errorf("acceptance command in the compose watcher %s: %w", shortID(id), ctx.Err())
	}
	if copyErr != nil {
		return ExecResult{Output: output}, fmt.Errorf("read output of acceptance command: %w", copyErr)
	}
	inspected, err := d.api.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return ExecResult{Output: output}, fmt.Errorf("exit code of acceptance command: %w", err)
	}
	code := inspected.ExitCode
	// GNU timeout exits 124, busybox's with the signal's 128+n.
	if timeout > 0 && time.Since(started) >= timeout && (code == 124 || code == 128+15 || code == 128+9) {
		code = layout.TimeoutExitCode
		output += fmt.Sprintf("\n[command timed out after %s]", timeout)
	}
	return ExecResult{Output: output, ExitCode: code}, nil
}

// composeExecEnv is what an acceptance command in the compose watcher
// gets on top of the watcher's environment: the gateway token blanked
// (the command has no model settings) and, when the watcher has an egress
// proxy (CODEAGENT_EGRESS_PROXY, which compose.open.yml empties) and dir
// is an attempt's copy, that proxy under the attempt's name, as the
// watcher gives the attempt's own commands: the gateway's refusals then
// name the task, and the run's follower takes the name as one of its own
// (an attempt an earlier process launched, on resume, too).
func (d *Docker) composeExecEnv(ctx context.Context, id, dir string) ([]string, error) {
	env := []string{"OPENAI_API_KEY="}
	task, n, ok := d.opts.Volumes.AttemptOf(d.opts.RunID, dir)
	if !ok {
		return env, nil
	}
	in, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect the compose watcher %s for its egress proxy: %w", shortID(id), err)
	}
	proxy := ""
	if c := in.Container.Config; c != nil {
		for _, kv := range c.Env {
			if v, found := strings.CutPrefix(kv, config.EgressProxyEnv+"="); found {
				proxy = v
			}
		}
	}
	if proxy == "" {
		return env, nil
	}
	named, err := config.AttemptProxyEnv(proxy, task, n)
	if err != nil {
		return nil, fmt.Errorf("the compose watcher %s: %w", shortID(id), err)
	}
	d.mu.Lock()
	d.composeLaunched(Attempt{TaskID: task, Attempt: n})
	d.mu.Unlock()
	return append(env, named...), nil
}

// containerOutput reads an exited container's whole log (stdout and
// stderr interleaved as written), keeping the end, with the key masked.
func (d *Docker) containerOutput(ctx context.Context, c *agentContainer) (string, error) {
	logs, err := d.api.ContainerLogs(ctx, c.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", fmt.Errorf("read the output of container %s: %w", shortID(c.id), err)
	}
	defer logs.Close()
	out := &output.Tail{Limit: layout.ExecOutputCap}
	if _, err := stdcopy.StdCopy(out, out, logs); err != nil && !errors.Is(err, context.Canceled) {
		return output.Redact(out.String(), d.opts.Env[config.APIKeyEnv]), fmt.Errorf("read the output of container %s: %w", shortID(c.id), err)
	}
	return output.Redact(out.String(), d.opts.Env[config.APIKeyEnv]), nil
}
