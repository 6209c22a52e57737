package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// verifyBoundary runs `codingagent boundary` in a short-lived container
// made like an attempt's (image, network, sockets, a token of its own)
// with two canaries on this host — one on loopback, one on the docker
// bridge's gateway address — and judges: every way out it tried that must
// fail failed, the gateway answered the token and refused the rest, no
// canary was touched, and the key is in neither its environment nor PID
// 1's.
func (d *Docker) verifyBoundary(ctx context.Context) (boundary.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, boundary.Timeout)
	defer cancel()
	args, canaries := d.probeArgs(ctx, layout.AgentBinary)
	defer closeAll(canaries)
	token, revoke, err := d.issueToken("boundary")
	if err != nil {
		return boundary.Verdict{}, err
	}
	defer revoke()
	way, err := d.openNet(netProbe, "", 0)
	if err != nil {
		return boundary.Verdict{}, err
	}
	defer way.close()
	created, err := d.api.ContainerCreate(ctx, d.createOptions(spec{name: d.containerName("boundary"), role: "preflight",
		entrypoint: args, cmd: []string{}, env: d.containerEnv(token), mounts: way.mounts()}))
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("create the boundary probe container from %s: %w", d.opts.Image, err)
	}
	defer func() {
		rmCtx, rmCancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer rmCancel()
		if _, err := d.api.ContainerRemove(rmCtx, created.ID, client.ContainerRemoveOptions{Force: true}); !removed(err) {
			d.log.Warn("remove the boundary probe container", "container", shortID(created.ID), "err", err)
		}
	}()
	wait := d.api.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	if _, err := d.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return boundary.Verdict{}, fmt.Errorf("start the boundary probe container: %w", err)
	}
	var code int64
	select {
	case res := <-wait.Result:
		code = res.StatusCode
	case err := <-wait.Error:
		return boundary.Verdict{}, fmt.Errorf("wait for the boundary probe container: %w", err)
	}
	logs, err := d.api.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe's output: %w", err)
	}
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, logs)
	logs.Close()
	var rep boundary.Report
	// Never the output itself in these errors: it holds the probe's environment.
	if err := json.Unmarshal([]byte(output.LastLine(out.String())), &rep); err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe exited %d without its report: %w", code, err)
	}
	if code != 0 {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe exited %d after its report: it failed in image %s (its output is not shown: it holds the probe's environment)", code, d.opts.Image)
	}
	return d.judge(rep, canaries...), nil
}

// probeArgs is `codingagent boundary` (binary) with what it must not reach:
// a name the allow-list lacks, the metadata address, and two canaries on
// this host, one on loopback, one on the docker bridge's gateway address.
// The caller closes the canaries after judging.
func (d *Docker) probeArgs(ctx context.Context, binary string) ([]string, []*boundary.Canary) {
	args := []string{binary, "boundary", "--disallowed", "boundary-probe.invalid",
		"--refused", "the cloud metadata address=169.254.169.254:80"}
	var canaries []*boundary.Canary
	if loop := boundary.NewCanary("127.0.0.1:0"); loop != nil {
		canaries = append(canaries, loop)
		args = append(args, "--refused", "a loopback service of the host="+loop.Addr())
	}
	if ip, err := d.networkGateway(ctx); err == nil {
		if bridge := boundary.NewCanary(net.JoinHostPort(ip, "0")); bridge != nil {
			canaries = append(canaries, bridge)
			args = append(args, "--refused", "the host's bridge gateway="+bridge.Addr())
		}
	}
	return args, canaries
}

func closeAll(cs []*boundary.Canary) {
	for _, c := range cs {
		c.Close()
	}
}

// judge turns the probe's report and the canaries into a Boundary.
func (d *Docker) judge(rep boundary.Report, cs ...*boundary.Canary) boundary.Verdict {
	var b boundary.Verdict
	for _, c := range rep.Checks {
		if !c.OK {
			b.Failed = append(b.Failed, c.Name+" ("+c.Detail+")")
		}
	}
	if len(rep.Checks) == 0 {
		b.Failed = append(b.Failed, "the probe tried nothing")
	}
	for _, c := range cs {
		if c != nil && c.Touched() {
			b.Failed = append(b.Failed, "a canary on "+c.Addr()+" was connected to")
		}
	}
	if key := d.opts.Key; key != "" {
		for _, kv := range rep.Environ {
			if strings.Contains(kv, key) {
				name, _, _ := strings.Cut(kv, "=")
				b.Failed = append(b.Failed, "the provider key is in the container's environment ("+name+")")
				break
			}
		}
	}
	b.Verified = len(b.Failed) == 0
	return b
}

// Boundary is what the start-of-run probe found.
func (d *Docker) Boundary() boundary.Verdict { return d.boundary }

// checkBoundary probes the boundary at the start of a run: a failure
// stops the run (boundary.ErrBreached) unless egress is open, where it is only
// recorded.
//
// A compose watcher the run reuses is probed in place (composeBoundary):
// one container serves every attempt, which is not fenced per attempt
// (trusted mode), but its network is the attempts' and is verified.
func (d *Docker) checkBoundary(ctx context.Context, compose string) error {
	var b boundary.Verdict
	var err error
	if compose != "" {
		b, err = d.composeBoundary(ctx, compose)
	} else {
		b, err = d.verifyBoundary(ctx)
	}
	if err != nil {
		return err
	}
	d.boundary = b
	if b.Verified || !d.closed() {
		if !b.Verified {
			d.log.Warn("egress is open: the attempts' boundary is not closed", "boundary", b.String())
		}
		return nil
	}
	if compose != "" {
		return fmt.Errorf("%w: %s; the compose watcher %s reaches what the attempts must not: recreate it from the repository's docker-compose.yml alone, without docker/compose.open.yml (make image, then docker compose up -d --force-recreate codingagent), or set egress: open to run on it as it is",
			boundary.ErrBreached, strings.Join(b.Failed, "; "), shortID(compose))
	}
	return fmt.Errorf("%w: %s; the attempts would reach what they must not: check the docker engine (NetworkMode none) or set egress: open to run anyway", boundary.ErrBreached, strings.Join(b.Failed, "; "))
}
