package mcp

import (
	"fmt"
	"regexp"

	"github.com/codeagent/codeagent/internal/config"
)

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand fills the ${VAR} references of cfg from getenv. secrets are the
// values that must never be shown: every env and header value and every
// variable any field refers to. An unset variable is an error naming it.
func expand(name string, cfg config.MCPServer, getenv func(string) string) (config.MCPServer, []string, error) {
	var secrets []string
	var missing error
	sub := func(field, s string) string {
		return varRef.ReplaceAllStringFunc(s, func(ref string) string {
			v := varRef.FindStringSubmatch(ref)[1]
			val := getenv(v)
			if val == "" && missing == nil {
				missing = fmt.Errorf("environment variable %s (used in mcp_servers.%s.%s) is not set", v, name, field)
			}
			secrets = append(secrets, val)
			return val
		})
	}
	out := config.MCPServer{Command: sub("command", cfg.Command), Cwd: sub("cwd", cfg.Cwd), URL: sub("url", cfg.URL)}
	for _, a := range cfg.Args {
		out.Args = append(out.Args, sub("args", a))
	}
	mapOf := func(field string, in map[string]string) map[string]string {
		if in == nil {
			return nil
		}
		m := make(map[string]string, len(in))
		for k, v := range in {
			m[k] = sub(field+"."+k, v)
			secrets = append(secrets, m[k])
		}
		return m
	}
	out.Env = mapOf("env", cfg.Env)
	out.Headers = mapOf("headers", cfg.Headers)
	return out, secrets, missing
}
