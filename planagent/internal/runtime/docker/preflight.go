package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// ErrModelUnreachable: the model server answers on the host but not from
// inside the agent's container (a server bound to 127.0.0.1 only, a
// firewall, a URL that names the host's loopback).
var ErrModelUnreachable = errors.New("the model server does not answer from inside the container")

// ErrImageNoShell: the image has no /bin/sh, which the agent's shell_exec
// and every acceptance command run through.
var ErrImageNoShell = errors.New("image has no /bin/sh")

// probeScript runs the probe through the image's shell, so an image
// without /bin/sh is found at start, before planning, and not after a
// task's first shell command or its acceptance.
const probeScript = "exec " + layout.AgentBinary + " probe --timeout 10s"

// preflightTimeout bounds the whole check: create, start, probe, remove.
const preflightTimeout = 30 * time.Second

// preflight runs `codingagent probe` in a short-lived container made like
// the agent's (same image, bind-mounted binary, network, extra hosts and
// environment, so the same loopback rewrite of OPENAI_BASE_URL) and fails with one line naming
// the URL the container used and the fix when the model server does not
// answer there. Without it a task fails minutes later with the cause cut
// off ("dial tcp 172.17.0.1:…: con…").
func (d *Docker) preflight(ctx context.Context, compose string) error {
	if compose != "" {
		return d.preflightCompose(ctx, compose)
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	// Only the network matters: the probe touches no volume. Through the
	// gateway, with a token of its own: the probe checks the way the
	// attempts will take.
	token, revoke, err := d.issueToken("preflight")
	if err != nil {
		return err
	}
	defer revoke()
	way, err := d.openNet(netProbe, "", 0)
	if err != nil {
		return err
	}
	defer way.close()
	opts := d.createOptions(spec{name: d.containerName("preflight"), role: "preflight",
		entrypoint: []string{"/bin/sh", "-c", probeScript}, env: d.containerEnv(token), mounts: way.mounts()})
	created, err := d.api.ContainerCreate(ctx, opts)
	if err != nil {
		return fmt.Errorf("create the model preflight container from %s: %w", d.opts.Image, err)
	}
	defer func() {
		rmCtx, rmCancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer rmCancel()
		if _, err := d.api.ContainerRemove(rmCtx, created.ID, client.ContainerRemoveOptions{Force: true}); !removed(err) {
			d.log.Warn("remove the model preflight container", "container", shortID(created.ID), "err", err)
		}
	}()
	wait := d.api.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	if _, err := d.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		if noShell(err) {
			return fmt.Errorf("%w: image %s cannot run the attempts: the agent's shell commands and the acceptance commands need /bin/sh; use an image with a shell (busybox is enough) or add one to it (%w)", ErrImageNoShell, d.opts.Image, err)
		}
		return fmt.Errorf("start the model preflight container: %w", err)
	}
	var code int64
	select {
	case res := <-wait.Result:
		code = res.StatusCode
	case err := <-wait.Error:
		return fmt.Errorf("wait for the model preflight container: %w", err)
	}
	if code == 0 {
		return nil
	}
	logs, err := d.api.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	var out bytes.Buffer
	if err == nil {
		_, _ = stdcopy.StdCopy(&out, &out, logs)
		logs.Close()
	}
	return d.probeFailed(int(code), out.String(), "")
}

// preflightCompose runs the probe in the compose watcher (id) that will
// take this run's tasks, with its own environment: compose, not planagent,
// gave it OPENAI_BASE_URL.
func (d *Docker) preflightCompose(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	created, err := d.api.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true,
		Cmd: []string{"/app/codingagent", "probe", "--timeout", "10s"}})
	if err != nil {
		return fmt.Errorf("check the model server from the compose watcher %s: %w", shortID(id), err)
	}
	attached, err := d.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("check the model server from the compose watcher %s: %w", shortID(id), err)
	}
	stop := context.AfterFunc(ctx, attached.Close)
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, attached.Reader)
	stop()
	attached.Close()
	inspected, err := d.api.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return fmt.Errorf("check the model server from the compose watcher %s: %w", shortID(id), err)
	}
	if inspected.ExitCode == 0 {
		return nil
	}
	return d.probeFailed(inspected.ExitCode, out.String(), "the compose watcher "+shortID(id)+" (docker compose up)")
}

// probeFailed is the one-line error of a failed probe: the URL the
// container used, the cause, the fix. where names a container other than
// a fresh one like the agent's.
func (d *Docker) probeFailed(code int, out, where string) error {
	cause := strings.TrimPrefix(output.LastLine(out), "codingagent: ")
	if strings.Contains(cause, `unknown command "probe"`) {
		// An image built before the probe existed: no check rather than a
		// false alarm (`make image` brings it).
		d.log.Warn("the image has no `codingagent probe`: the model server was not checked from inside the container; rebuild it with `make image`", "image", d.opts.Image)
		return nil
	}
	if cause == "" {
		cause = fmt.Sprintf("the probe exited %d", code)
	}
	if where != "" {
		cause = "in " + where + ": " + cause
	}
	// From the host first: a server that is down or a name without DNS
	// is not fixed by listening on 0.0.0.0. (A compose watcher got its
	// URL from compose, not from planagent: no host check then.)
	if raw := d.opts.Env["OPENAI_BASE_URL"]; raw != "" && where == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*hostProbeTimeout)
		advice, loopbackOnly, answers := hostAdvice(ctx, raw)
		cancel()
		if answers && d.closed() && d.gatewayBase != "" {
			// The gateway, on this host, asks the server itself: what
			// fails is the container's way to the gateway, a unix socket.
			return fmt.Errorf("%w: %s; under closed egress the container has no network and reaches planagent's model gateway through a unix socket mounted at %s: that needs the engine on this machine's kernel (native Linux Docker, not Docker Desktop's VM) and an image whose codingagent relays it (rebuild with `make image`); where that cannot be, set egress: open (docs/egress.md)",
				ErrModelUnreachable, cause, relayDir)
		}
		if !loopbackOnly {
			return fmt.Errorf("%w: %s; %s", ErrModelUnreachable, cause, advice)
		}
	}
	if d.gatewayBase != "" && where == "" {
		// The server answers this host, which is where the gateway asks
		// it: what fails is the way from the container to the gateway.
		return fmt.Errorf("%w: %s; the container reaches the model through planagent's model gateway at %s: let the docker network reach this host at that address (a firewall rule), or use --network host",
			ErrModelUnreachable, cause, d.gatewayBase)
	}
	return fmt.Errorf("%w: %s. Make the server listen on 0.0.0.0 or the docker bridge (Ollama: OLLAMA_HOST=0.0.0.0), or set OPENAI_BASE_URL to a URL the container can reach",
		ErrModelUnreachable, cause)
}

// noShell tells whether a container could not start because its image has
// no /bin/sh: the OCI runtime's "exec: \"/bin/sh\": stat /bin/sh: no such
// file or directory".
func noShell(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "/bin/sh") && (strings.Contains(msg, "no such file") || strings.Contains(msg, "not found"))
}
