package cli

import (
	"context"
	"io"
	"os"

	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runtime/docker"
)

// newDockerRuntime builds the docker runtime from the effective settings.
// Files in the workspace stay the operator's: the container runs as their uid:gid.
func newDockerRuntime(ctx context.Context, s *session, runID string, env map[string]string, log io.Writer) (orchestrator.Runtime, error) {
	// The model gateway keeps the key in planagent: each attempt's
	// container gets a token of its own (a compose watcher, trusted, keeps
	// the key compose gave it). It serves as long as planagent runs.
	gw, err := s.modelGateway(env)
	if err != nil {
		return nil, err
	}
	opts := docker.Options{
		Volumes: s.layout, Image: s.cfg.Image, RunID: runID, Executable: s.f.Executable,
		Memory: s.cfg.ContainerMemory, CPUs: s.cfg.ContainerCPUs, Pids: int64(s.cfg.ContainerPids),
		Network: s.cfg.Network, Env: env, UID: os.Getuid(), GID: os.Getgid(),
		Logger: s.logger, Log: log, Verbose: s.verbose, Preflight: true,
	}
	if opts.Egress, err = s.egressPolicy(); err != nil {
		return nil, err
	}
	opts.EgressRefused = s.egressRefused(runID)
	opts.Key = s.cfg.APIKey
	if gw != nil {
		opts.Gateway = gw // only when there is one: a nil *Gateway is no nil interface
	}
	d, err := docker.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	// A reused compose watcher's refusals come from its gateway's file:
	// an attempt's result reads what is there by then.
	s.refusals.follow(d.CatchUpRefusals)
	return d, nil
}
