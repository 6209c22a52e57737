package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// composeBinary is codingagent in the compose watcher's image.
const composeBinary = "/app/codingagent"

// composeBoundary runs `codingagent boundary` in the compose watcher id
// (docker exec), with the watcher's own environment: its gateway token,
// its relay to the gateway service's sockets, its egress proxy. The tries
// and the canaries are the docker probe's; the watcher must besides have
// no network of its own, a model gateway (a request without its token is
// refused there) and an egress proxy, and the provider's key must be in
// neither the probe's environment nor its PID 1's.
//
// A watcher started before this check — an image whose codingagent has no
// probe, or an older compose file (the key and a network in the watcher) —
// fails it: what it reaches is not known, or is too much.
func (d *Docker) composeBoundary(ctx context.Context, id string) (boundary.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, boundary.Timeout)
	defer cancel()
	in, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("inspect the compose watcher %s for its boundary: %w", shortID(id), err)
	}
	mode := ""
	if hc := in.Container.HostConfig; hc != nil {
		mode = string(hc.NetworkMode)
	}
	args, canaries := d.probeArgs(ctx, composeBinary)
	defer closeAll(canaries)
	created, err := d.api.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: args})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe in the compose watcher %s: %w", shortID(id), err)
	}
	attached, err := d.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe in the compose watcher %s: %w", shortID(id), err)
	}
	stop := context.AfterFunc(ctx, attached.Close)
	var out, errOut bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &errOut, attached.Reader)
	stop()
	attached.Close()
	inspected, err := d.api.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe in the compose watcher %s: %w", shortID(id), err)
	}
	if inspected.ExitCode != 0 && strings.Contains(errOut.String()+out.String(), `unknown command "boundary"`) {
		return boundary.Verdict{Failed: []string{"the compose watcher's codingagent has no boundary probe (its image is older than this planagent)"}}, nil
	}
	var rep boundary.Report
	// Never the output itself in these errors: it holds the watcher's environment.
	if err := json.Unmarshal([]byte(output.LastLine(out.String())), &rep); err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe in the compose watcher %s exited %d without its report: %w", shortID(id), inspected.ExitCode, err)
	}
	if inspected.ExitCode != 0 {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe in the compose watcher %s exited %d: recreate the watcher from this planagent's image (make image; docker compose up -d --force-recreate codingagent)", shortID(id), inspected.ExitCode)
	}
	return d.judgeCompose(rep, mode, canaries...), nil
}

// judgeCompose is judge with what a compose watcher must hold besides:
// no network of its own (network_mode none: compose.open.yml gives it
// one), and the probe's tries of the model gateway and the egress proxy,
// which it makes only when the watcher's environment names them.
func (d *Docker) judgeCompose(rep boundary.Report, mode string, cs ...*boundary.Canary) boundary.Verdict {
	b := d.judge(rep, cs...)
	tried := map[string]bool{}
	for _, c := range rep.Checks {
		tried[c.Name] = true
	}
	if mode != "none" {
		b.Failed = append(b.Failed, fmt.Sprintf("the compose watcher has a network (network_mode %q, not none)", mode))
	}
	if !tried["gateway without a token"] {
		b.Failed = append(b.Failed, "the compose watcher has no model gateway (no OPENAI_BASE_URL)")
	}
	if !tried["a host not allowed, through the proxy"] {
		b.Failed = append(b.Failed, "the compose watcher has no egress proxy (no HTTP_PROXY)")
	}
	b.Verified = len(b.Failed) == 0
	return b
}
