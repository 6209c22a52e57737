package runtime

import (
	"net"
	"net/url"
	"slices"
	"strings"
)

// dockerHostAlias resolves to the host inside the container through
// ExtraHosts "host.docker.internal:host-gateway" (engine 20.10+).
const dockerHostAlias = "host.docker.internal"

// containerEnv is the container's environment: the OPENAI_* settings, with a
// base URL on the host's loopback rewritten to reach the host from inside.
func (d *Docker) containerEnv() []string {
	keys := make([]string, 0, len(d.opts.Env))
	for k := range d.opts.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		v := d.opts.Env[k]
		if k == "OPENAI_BASE_URL" && d.opts.Network != "host" {
			if rewritten, ok := rewriteBaseURL(v); ok {
				// Only the host is logged: the URL may carry credentials.
				d.log.Warn("OPENAI_BASE_URL points at this host's loopback; the container reaches it as "+dockerHostAlias+
					", so the server must listen on the docker bridge too (e.g. 0.0.0.0), not only on 127.0.0.1",
					"host", dockerHostAlias)
				v = rewritten
			}
		}
		env = append(env, k+"="+v)
	}
	return env
}

// rewriteBaseURL replaces a loopback host (localhost, 127.0.0.0/8, ::1) in
// raw with host.docker.internal, keeping scheme, port, path and query. ok is
// false when raw is not such a URL and is returned unchanged.
func rewriteBaseURL(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw, false
	}
	host := u.Hostname()
	loopback := strings.EqualFold(strings.TrimSuffix(host, "."), "localhost")
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if !loopback {
		return raw, false
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(dockerHostAlias, port)
	} else {
		u.Host = dockerHostAlias
	}
	return u.String(), true
}
