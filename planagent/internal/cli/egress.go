package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/local"
)

// egressRecord keeps what the egress proxy refused each attempt, the first
// maxRefusalsKept of them (an agent retrying a blocked download in a loop
// must not grow the run's state), for the orchestrator's EgressLog.
type egressRecord struct {
	mu  sync.Mutex
	got map[string][]string
	n   map[string]int
	// catchUp, when set, brings in the refusals that a file still holds
	// (the compose gateway's, docker.Docker.CatchUpRefusals) before an
	// attempt's are read.
	catchUp func()
}

// follow has Refused call catchUp first.
func (e *egressRecord) follow(catchUp func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp = catchUp
}

const maxRefusalsKept = 10

func (e *egressRecord) add(name, refusal string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.got == nil {
		e.got, e.n = map[string][]string{}, map[string]int{}
	}
	e.n[name]++
	if len(e.got[name]) < maxRefusalsKept {
		e.got[name] = append(e.got[name], refusal)
	}
}

// Refused is the orchestrator's EgressLog.
func (e *egressRecord) Refused(name string) []string {
	e.mu.Lock()
	catchUp := e.catchUp
	e.mu.Unlock()
	if catchUp != nil {
		catchUp() // it adds through add: not under e.mu
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Clone(e.got[name])
	if more := e.n[name] - len(out); more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return out
}

// egressPolicy is the run's allow-list from egress and egress_hosts; a bad
// entry is a usage error naming it.
func (s *session) egressPolicy() (*egress.Policy, error) {
	p, err := egress.Parse(s.cfg.Egress, s.cfg.EgressHosts)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	return p, nil
}

// egressRefused reports a refusal of the egress proxy as an event of the
// run (--json: egress_refused) and a warning in the log.
func (s *session) egressRefused(runID string) func(task string, attempt int, r egress.Refusal) {
	return func(task string, n int, r egress.Refusal) {
		if task != "" {
			s.refusals.add(attempt.Name(task, n), r.String())
		}
		if s.events == nil {
			return
		}
		s.events.Emit(events.Event{Type: events.EgressRefused, Time: time.Now(), RunID: runID, TaskID: task,
			Text: r.String(), Status: "refused",
			Data: map[string]any{"attempt": n, "method": r.Method, "host": r.Host, "port": r.Port, "reason": r.Reason}})
	}
}

// localEgressProxy serves the egress proxy on loopback for the local
// runtime and returns the environment that points the agent's clients and
// tools at it. It is advice, not a wall: the agent is a process of this
// host and can open any socket it likes (docs/egress.md). nil under
// egress: open.
//
// One watcher runs every attempt, so one proxy serves them all: the
// watcher gives each attempt's commands the proxy's URL with the
// attempt's name as its user (config.EgressProxyEnv), which comes back in
// Proxy-Authorization and names the refusal's task and attempt. A request
// without it (the watcher's own, an MCP server's) is the run's.
func (s *session) localEgressProxy(p *egress.Policy, runID string) ([]string, error) {
	if p.IsOpen() {
		return nil, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: listen on loopback: %w", err)
	}
	refused := s.egressRefused(runID)
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second,
		Handler: egress.New(egress.Options{Policy: p, Logger: s.logger, OnRefuse: func(r egress.Refusal) {
			task, n, _ := attempt.ParseName(r.Client)
			refused(task, n, r)
		}})}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("the egress proxy stopped serving", "err", err)
		}
	}()
	url := "http://" + l.Addr().String()
	noProxy := "localhost,127.0.0.1,::1"
	return []string{"HTTPS_PROXY=" + url, "https_proxy=" + url, "HTTP_PROXY=" + url, "http_proxy=" + url,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy, config.EgressProxyEnv + "=" + url}, nil
}

// boundaryOf is the runtime's record of its attempts' boundary: the
// docker runtime probes it; the others say what they cannot enforce.
func boundaryOf(rt any) string {
	switch r := rt.(type) {
	case interface{ Boundary() boundary.Verdict }:
		return r.Boundary().String()
	case interface{ BoundaryNote() string }:
		return r.BoundaryNote()
	case *local.Local:
		return "not enforced: the local runtime runs the agent as a process of this host (the egress proxy is set in its environment, not enforced)"
	}
	return "not verified: this runtime has no boundary probe yet"
}
