package docker

import (
	"maps"
	"slices"

	"github.com/codeagent/codeagent/internal/config"
)

// dockerHostAlias resolves to the host inside the container through
// ExtraHosts "host.docker.internal:host-gateway" (engine 20.10+).
const dockerHostAlias = "host.docker.internal"

// containerEnv is the container's environment: the OPENAI_* settings, with a
// base URL on the host's loopback rewritten to reach the host from inside.
// With the model gateway the key and base URL are the attempt's token and
// the gateway's URL (token is "" only without a gateway).
func (d *Docker) containerEnv(token string) []string {
	vars := maps.Clone(d.opts.Env)
	if d.gatewayBase != "" {
		d.gatewayEnv(vars, token)
	}
	if d.closed() {
		maps.Copy(vars, relayEnv(d.opts.Gateway != nil))
	}
	keys := slices.Sorted(maps.Keys(vars))
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		v := vars[k]
		if (k == "OTEL_EXPORTER_OTLP_ENDPOINT" || k == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") && d.opts.Network != "host" {
			v, _ = rewriteBaseURL(v) // the traces' collector on this host, as the container reaches it
		}
		if k == "OPENAI_BASE_URL" && d.opts.Network != "host" && d.gatewayBase == "" {
			if rewritten, ok := rewriteBaseURL(v); ok {
				// Only the host is logged: the URL may carry credentials. Info,
				// not a warning: the preflight checks that it answers there.
				d.log.Info("OPENAI_BASE_URL points at this host's loopback; the container reaches it as "+dockerHostAlias+
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
	return config.RewriteLoopback(raw, dockerHostAlias)
}
