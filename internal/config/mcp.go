package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// MCPServer is one entry of mcp_servers: a stdio server (Command) or a
// streamable-HTTP server (URL). Env and Headers values may hold ${VAR}
// references; they are kept unexpanded here so the settings can travel to
// another machine (the agent's container) and be expanded where the server
// starts.
type MCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Transport is "stdio" or "http".
func (s MCPServer) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// The keys outside the field table: structured values have their own
// parsing, and no flag.
const (
	keyMCPServers  = "mcp_servers"
	keyMCPReadOnly = "mcp_read_only"
	// EnvMCPServers holds mcp_servers as a JSON object of the same shape.
	EnvMCPServers = "CODEAGENT_MCP_SERVERS"
	// EnvMCPReadOnly holds mcp_read_only as comma-separated names.
	EnvMCPReadOnly = "CODEAGENT_MCP_READ_ONLY"
)

// mcpServerName is what may appear in mcp__<server>__<tool>, a model-facing
// tool name.
var mcpServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

var mcpServerKeys = []string{"command", "args", "env", "cwd", "url", "headers"}

// applyMCPServersNode parses the mcp_servers mapping of a file.
func (st *state) applyMCPServersNode(v *yaml.Node, where func(line int) string, o func(line int) origin) {
	fail := func(line int, format string, args ...any) {
		st.errs = append(st.errs, &Error{Where: where(line), Key: keyMCPServers, Msg: fmt.Sprintf(format, args...)})
	}
	if v.Kind != yaml.MappingNode {
		fail(v.Line, "want a mapping of server name to {command, args, env, cwd} or {url, headers}, got %s", describe(v))
		return
	}
	servers := make(map[string]MCPServer)
	before := len(st.errs)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, sv := v.Content[i], resolve(v.Content[i+1])
		name := k.Value
		if _, dup := servers[name]; dup {
			fail(k.Line, "server %q is defined twice: keep one", name)
			continue
		}
		if sv.Kind != yaml.MappingNode {
			fail(k.Line, "server %q: want a mapping with command (stdio) or url (streamable HTTP), got %s", name, describe(sv))
			continue
		}
		var s MCPServer
		for j := 0; j+1 < len(sv.Content); j += 2 {
			fk, fv := sv.Content[j], resolve(sv.Content[j+1])
			var err error
			switch fk.Value {
			case "command":
				err = fv.Decode(&s.Command)
			case "args":
				err = fv.Decode(&s.Args)
			case "env":
				err = fv.Decode(&s.Env)
			case "cwd":
				err = fv.Decode(&s.Cwd)
			case "url":
				err = fv.Decode(&s.URL)
			case "headers":
				err = fv.Decode(&s.Headers)
			default:
				fail(fk.Line, "server %q: unknown key %q (known: %s)", name, fk.Value, strings.Join(mcpServerKeys, ", "))
				continue
			}
			if err != nil {
				fail(fk.Line, "server %q: %s: want %s", name, fk.Value, mcpShape(fk.Value))
			}
		}
		if msg := checkMCPServer(name, s); msg != "" {
			fail(k.Line, "%s", msg)
			continue
		}
		servers[name] = s
	}
	if len(st.errs) == before {
		// A second file read after the first (a project file after a
		// user-level one) adds its servers by name rather than dropping the
		// first file's: personal servers stay, a same-named one is replaced.
		if st.origins[keyMCPServers].kind == fromFile {
			for name, s := range st.cfg.MCPServers {
				if _, ok := servers[name]; !ok {
					servers[name] = s
				}
			}
		}
		st.cfg.MCPServers = servers
		st.origins[keyMCPServers] = o(v.Line)
	}
}

// applyMCPReadOnlyNode parses the mcp_read_only list of a file.
func (st *state) applyMCPReadOnlyNode(v *yaml.Node, where string, o origin) {
	var names []string
	if err := v.Decode(&names); err != nil {
		st.errs = append(st.errs, &Error{Where: where, Key: keyMCPReadOnly,
			Msg: "want a list of tool names (mcp__<server>__<tool>) or server names, e.g. [mcp__docs__search]"})
		return
	}
	st.cfg.MCPReadOnly = names
	st.origins[keyMCPReadOnly] = o
}

func mcpShape(key string) string {
	switch key {
	case "args":
		return "a list of strings"
	case "env", "headers":
		return "a mapping of NAME: value (values may use ${VAR})"
	}
	return "a single string"
}

// checkMCPServer returns what is wrong with one server, "" when nothing is.
func checkMCPServer(name string, s MCPServer) string {
	if !mcpServerName.MatchString(name) {
		return fmt.Sprintf("server name %q is not allowed: want 1-40 letters, digits, '_' or '-' (it becomes part of the tool names mcp__<server>__<tool>)", name)
	}
	switch {
	case s.Command != "" && s.URL != "":
		return fmt.Sprintf("server %q has both command and url: a server is either stdio (command, args, env, cwd) or streamable HTTP (url, headers)", name)
	case s.Command == "" && s.URL == "":
		return fmt.Sprintf("server %q has neither command nor url: give command (a stdio server) or url (a streamable-HTTP server)", name)
	case s.URL != "":
		if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
			return fmt.Sprintf("server %q: args, env and cwd are for stdio servers; an HTTP server takes url and headers", name)
		}
		if !isHTTPURL(expandForCheck(s.URL)) {
			return fmt.Sprintf("server %q: url %q is not an http(s) URL such as \"http://localhost:8080/mcp\"", name, s.URL)
		}
	case len(s.Headers) > 0:
		return fmt.Sprintf("server %q: headers are for HTTP servers; a stdio server takes command, args, env and cwd", name)
	}
	return ""
}

// expandForCheck fills ${VAR} references with a placeholder host so a URL
// made of variables can still be checked for its shape.
func expandForCheck(s string) string {
	return mcpVarRef.ReplaceAllString(s, "x")
}

var mcpVarRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// MCPVarRefs returns the names of the environment variables the servers'
// env, headers, url, command, args and cwd refer to as ${VAR}, sorted, so a
// runtime can pass them on to where the servers start.
func MCPVarRefs(servers map[string]MCPServer) []string {
	seen := make(map[string]bool)
	add := func(s string) {
		for _, m := range mcpVarRef.FindAllString(s, -1) {
			seen[m[2:len(m)-1]] = true
		}
	}
	for _, s := range servers {
		add(s.Command)
		add(s.URL)
		add(s.Cwd)
		for _, a := range s.Args {
			add(a)
		}
		for _, v := range s.Env {
			add(v)
		}
		for _, v := range s.Headers {
			add(v)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// EncodeMCPServers is the CODEAGENT_MCP_SERVERS value for servers (their
// ${VAR} references left as they are); "" when there are none.
func EncodeMCPServers(servers map[string]MCPServer) (string, error) {
	if len(servers) == 0 {
		return "", nil
	}
	b, err := json.Marshal(servers)
	if err != nil {
		return "", fmt.Errorf("encode mcp_servers: %w", err)
	}
	return string(b), nil
}

// applyMCPEnv reads CODEAGENT_MCP_SERVERS and CODEAGENT_MCP_READ_ONLY. The
// servers replace those of the file as a whole, like any other key.
func (st *state) applyMCPEnv(getenv func(string) string) {
	o := origin{kind: fromEnv, name: EnvMCPServers}
	if raw := strings.TrimSpace(getenv(EnvMCPServers)); raw != "" {
		var servers map[string]MCPServer
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&servers); err != nil {
			// The value may hold secrets: name the problem, never echo it.
			st.errs = append(st.errs, &Error{Where: o.where(), Key: keyMCPServers,
				Msg: `want a JSON object {"name": {"command": ..., "args": [...], "env": {...}, "cwd": ...} or {"url": ..., "headers": {...}}}`,
				Err: jsonErrorWithoutValue(err)})
		} else {
			bad := false
			for _, name := range sortedNames(servers) {
				if msg := checkMCPServer(name, servers[name]); msg != "" {
					st.errs = append(st.errs, &Error{Where: o.where(), Key: keyMCPServers, Msg: msg})
					bad = true
				}
			}
			if !bad {
				st.cfg.MCPServers = servers
				st.origins[keyMCPServers] = o
			}
		}
	}
	if raw := strings.TrimSpace(getenv(EnvMCPReadOnly)); raw != "" {
		var names []string
		for _, n := range strings.Split(raw, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		st.cfg.MCPReadOnly = names
		st.origins[keyMCPReadOnly] = origin{kind: fromEnv, name: EnvMCPReadOnly}
	}
}

// jsonErrorWithoutValue keeps a JSON error's position and kind but not the
// offending text, which may be part of a secret.
func jsonErrorWithoutValue(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("field %s: wrong type (want %s)", typ.Field, typ.Type)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return err // names the field, not a value
	}
	return fmt.Errorf("invalid JSON")
}

func sortedNames(servers map[string]MCPServer) []string {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// formatMCPServers shows the servers without their env and header values,
// which may be secrets.
func formatMCPServers(servers map[string]MCPServer) string {
	if len(servers) == 0 {
		return "(none)"
	}
	var parts []string
	for _, name := range sortedNames(servers) {
		s := servers[name]
		what := s.URL
		if s.Command != "" {
			what = strings.Join(append([]string{s.Command}, s.Args...), " ")
		}
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", name, s.Transport(), what))
	}
	return strings.Join(parts, ", ")
}
