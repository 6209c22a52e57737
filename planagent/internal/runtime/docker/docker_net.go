package docker

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/codeagent/codeagent/planagent/internal/egress"
)

// Closed egress (egress.go's policy, not "open"): a container has no
// network at all (NetworkMode none: only its own loopback), and two unix
// sockets planagent serves in a directory of the container's own, mounted
// at relayDir: the model gateway and the egress proxy. codingagent, the
// container's first process, relays two loopback ports to them
// (codingagent/internal/relay), so the agent's client and tools speak
// plain TCP to 127.0.0.1 and HTTP(S)_PROXY. Nothing else leaves: no route,
// no bridge, no host address — airtight without any firewall rule on the
// host, which an internal docker network is not (its containers still
// reach every address of the host itself).
const (
	relayDir     = "/run/codeagent"
	gatewaySock  = "gateway.sock"
	proxySock    = "proxy.sock"
	relayGateway = "127.0.0.1:47810"
	relayProxy   = "127.0.0.1:47811"
)

// closed tells whether the containers get no network of their own.
func (d *Docker) closed() bool { return d.egress != nil && !d.egress.IsOpen() }

// relayEnv is what a container needs to go out through the relay: the
// proxy settings any client reads (both spellings), loopback kept direct,
// and the relay's own setting.
func relayEnv(withGateway bool) map[string]string {
	proxy := "http://" + relayProxy
	spec := relayProxy + "=" + relayDir + "/" + proxySock
	if withGateway {
		spec = relayGateway + "=" + relayDir + "/" + gatewaySock + "," + spec
	}
	noProxy := "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTPS_PROXY": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "http_proxy": proxy,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
		"CODEAGENT_RELAY": spec,
	}
}

// envList is vars as KEY=VALUE in the order of the keys.
func envList(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// attemptNet is one container's way out under closed egress: its sockets
// and their servers, ended with the container.
type attemptNet struct {
	dir     string
	servers []*http.Server
	mount   mount.Mount
}

// netUse is what a container's way out serves: an attempt (the model
// gateway and the egress proxy), an acceptance command (the proxy alone:
// the command has no model settings) or a probe, whose refusals are
// expected and are not reported as the run's.
type netUse int

const (
	netAttempt netUse = iota
	netExec
	netProbe
)

// openNet serves the model gateway and the egress proxy on unix sockets in
// a new directory for one container (task and attempt name it in the log
// and the refusals; an acceptance command in the shared workspace has no
// task: its refusals are the run's); nil under open egress. The directory
// is under the system's temporary directory, not the volumes: a unix
// socket's path is limited to about 100 bytes.
func (d *Docker) openNet(use netUse, task string, attempt int) (*attemptNet, error) {
	if !d.closed() {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "codeagent-net-")
	if err != nil {
		return nil, fmt.Errorf("closed egress: a directory for the container's sockets: %w", err)
	}
	n := &attemptNet{dir: dir, mount: mount.Mount{Type: mount.TypeBind, Source: dir, Target: relayDir, ReadOnly: true}}
	proxy := egress.New(egress.Options{Policy: d.egress, Logger: d.log.With("task", task, "attempt", attempt),
		OnRefuse: func(r egress.Refusal) {
			if d.opts.EgressRefused != nil && use != netProbe {
				d.opts.EgressRefused(task, attempt, r)
			}
		}})
	handlers := map[string]http.Handler{proxySock: proxy}
	if d.opts.Gateway != nil && use != netExec {
		handlers[gatewaySock] = d.opts.Gateway
	}
	for name, h := range handlers {
		l, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			n.close()
			return nil, fmt.Errorf("closed egress: listen on %s: %w", filepath.Join(dir, name), err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
		n.servers = append(n.servers, srv)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("a container's socket stopped serving", "socket", name, "err", err)
			}
		}()
	}
	return n, nil
}

// close ends the servers (a tunnel still open ends with the container) and
// removes the sockets.
func (n *attemptNet) close() {
	if n == nil {
		return
	}
	for _, s := range n.servers {
		_ = s.Close()
	}
	_ = os.RemoveAll(n.dir)
}

// mounts is the container's socket directory, if any.
func (n *attemptNet) mounts() []mount.Mount {
	if n == nil {
		return nil
	}
	return []mount.Mount{n.mount}
}

// ownEgress adds to the user's allow-list what the attempts need of this
// host without the gateway: the model server itself when there is no key
// (so no gateway) and the traces' collector. A loopback URL is reached as
// host.docker.internal, which the proxy maps to this host's loopback.
func ownEgress(p *egress.Policy, env map[string]string, withGateway bool) (*egress.Policy, error) {
	var entries, hosts []string
	keys := []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}
	if !withGateway {
		keys = append(keys, "OPENAI_BASE_URL")
	}
	for _, k := range keys {
		raw := env[k]
		if raw == "" {
			continue
		}
		if rewritten, ok := rewriteBaseURL(raw); ok {
			raw = rewritten
			hosts = append(hosts, dockerHostAlias+"=127.0.0.1")
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			continue
		}
		entries = append(entries, egress.EntryFor(u))
	}
	if len(entries) == 0 {
		return p, nil
	}
	return p.With(entries, hosts)
}
