package config

import (
	"net"
	"net/url"
	"strings"
)

// LoopbackHostEnv names the host that stands for this machine's loopback
// inside a container: docker-compose.yml sets it to host.docker.internal
// (with extra_hosts host-gateway), so the quick start's
// OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 works in the compose watcher too.
const LoopbackHostEnv = "CODEAGENT_LOOPBACK_HOST"

// RewriteLoopback replaces a loopback host (localhost, 127.0.0.0/8, ::1) in
// raw with host, keeping scheme, port, path and query. ok is false when raw
// is not such a URL; it is then returned unchanged.
func RewriteLoopback(raw, host string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || host == "" {
		return raw, false
	}
	h := u.Hostname()
	loopback := strings.EqualFold(strings.TrimSuffix(h, "."), "localhost")
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if !loopback {
		return raw, false
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(host, port)
	} else {
		u.Host = host
	}
	return u.String(), true
}

// ModelDownGraceEnv is how long an attempt's agent keeps trying a model
// server that refuses connections (a Go duration): the kubernetes runtime
// sets it on the pods it serves through planagent's model gateway, which
// is down while a killed planagent is resumed. Unset or invalid: no grace.
const ModelDownGraceEnv = "CODEAGENT_MODEL_DOWN_GRACE"
