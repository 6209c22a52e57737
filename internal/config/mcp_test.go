package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestMCPServersFromFile(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "codeagent.yaml", `model: m
mcp_servers:
  docs:
    command: docs-server
    args: [--root, .]
    env:
      DOCS_TOKEN: ${DOCS_TOKEN}
    cwd: sub
  remote:
    url: https://mcp.example.com/mcp
    headers:
      Authorization: Bearer ${REMOTE_TOKEN}
mcp_read_only: [mcp__remote__write_note, docs]
`)
	l, err := Load(Options{File: p, Getenv: env(nil)})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := map[string]MCPServer{
		"docs":   {Command: "docs-server", Args: []string{"--root", "."}, Env: map[string]string{"DOCS_TOKEN": "${DOCS_TOKEN}"}, Cwd: "sub"},
		"remote": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
	}
	if !reflect.DeepEqual(l.MCPServers, want) {
		t.Errorf("servers = %+v\nwant %+v", l.MCPServers, want)
	}
	if !reflect.DeepEqual(l.MCPReadOnly, []string{"mcp__remote__write_note", "docs"}) {
		t.Errorf("read only = %v", l.MCPReadOnly)
	}
	if !strings.HasPrefix(string(l.Sources["mcp_servers"]), "file (") {
		t.Errorf("source = %q", l.Sources["mcp_servers"])
	}
	if got := MCPVarRefs(l.MCPServers); !reflect.DeepEqual(got, []string{"DOCS_TOKEN", "REMOTE_TOKEN"}) {
		t.Errorf("var refs = %v", got)
	}

	// The environment form round-trips and replaces the file's servers.
	enc, err := EncodeMCPServers(l.MCPServers)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(enc, "Bearer x") || !strings.Contains(enc, "${REMOTE_TOKEN}") {
		t.Errorf("encoded servers must keep references unexpanded: %s", enc)
	}
	l2, err := Load(Options{File: p, Getenv: env(map[string]string{EnvMCPServers: enc, EnvMCPReadOnly: "a, b"})})
	if err != nil {
		t.Fatalf("Load from env: %v", err)
	}
	if !reflect.DeepEqual(l2.MCPServers, want) || !reflect.DeepEqual(l2.MCPReadOnly, []string{"a", "b"}) {
		t.Errorf("from env: %+v %v", l2.MCPServers, l2.MCPReadOnly)
	}
	if l2.Sources["mcp_servers"] != "env CODEAGENT_MCP_SERVERS" {
		t.Errorf("source = %q", l2.Sources["mcp_servers"])
	}
}

func TestMCPServersErrors(t *testing.T) {
	tests := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{name: "unknown server key", file: "mcp_servers:\n  a:\n    command: x\n    comand: y\n", want: `codeagent.yaml:4: key "mcp_servers": server "a": unknown key "comand"`},
		{name: "both", file: "mcp_servers:\n  a:\n    command: x\n    url: http://h/mcp\n", want: `server "a" has both command and url`},
		{name: "neither", file: "mcp_servers:\n  a:\n    args: [x]\n", want: `server "a" has neither command nor url`},
		{name: "bad name", file: "mcp_servers:\n  a.b:\n    command: x\n", want: `server name "a.b" is not allowed`},
		{name: "bad url", file: "mcp_servers:\n  a:\n    url: ftp://h\n", want: `url "ftp://h" is not an http(s) URL`},
		{name: "headers on stdio", file: "mcp_servers:\n  a:\n    command: x\n    headers: {A: b}\n", want: "headers are for HTTP servers"},
		{name: "not a mapping", file: "mcp_servers: [a]\n", want: "want a mapping of server name"},
		{name: "args not a list", file: "mcp_servers:\n  a:\n    command: x\n    args: {a: b}\n", want: `args: want a list of strings`},
		{name: "read only not a list", file: "mcp_read_only: {a: b}\n", want: "want a list of tool names"},
		{name: "twice", file: "mcp_servers:\n  a: {command: x}\nmcp_servers:\n  b: {command: y}\n", want: "set twice"},
		{name: "env not JSON", env: map[string]string{EnvMCPServers: `{"a": {"command": "x", "env": {"T": "sk-secret`}, want: "env CODEAGENT_MCP_SERVERS"},
		{name: "env unknown field", env: map[string]string{EnvMCPServers: `{"a": {"cmd": "x"}}`}, want: `unknown field "cmd"`},
		{name: "env invalid server", env: map[string]string{EnvMCPServers: `{"a": {}}`}, want: `server "a" has neither command nor url`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			var p string
			if tt.file != "" {
				p = writeFile(t, dir, "codeagent.yaml", tt.file)
			}
			_, err := Load(Options{File: p, Getenv: env(tt.env)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("the error echoes a secret: %v", err)
			}
		})
	}
}

func TestPrintHidesMCPSecrets(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "codeagent.yaml", "mcp_servers:\n  gh:\n    url: https://h/mcp\n    headers: {Authorization: Bearer sk-literal-secret}\n  fs:\n    command: fs-server\n    env: {TOKEN: tok-literal-secret}\n")
	l, err := Load(Options{File: p, Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := l.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "literal-secret") {
		t.Errorf("Print shows a secret:\n%s", out)
	}
	if !strings.Contains(out, "fs (stdio: fs-server), gh (http: https://h/mcp)") {
		t.Errorf("Print does not list the servers:\n%s", out)
	}
}

// Two files applied one after the other (a user-level file, then the
// project's) merge their servers by name, the later file winning.
func TestMCPServersMergeAcrossFiles(t *testing.T) {
	st := &state{cfg: Defaults(), origins: make(map[string]origin)}
	st.applyFile([]byte("mcp_servers:\n  mine: {command: my-server}\n  shared: {command: old}\n"), "user.yaml", "/home/u/user.yaml")
	st.applyFile([]byte("mcp_servers:\n  shared: {url: http://h/mcp}\n"), "codeagent.yaml", "/p/codeagent.yaml")
	if len(st.errs) > 0 {
		t.Fatal(st.errs)
	}
	want := map[string]MCPServer{"mine": {Command: "my-server"}, "shared": {URL: "http://h/mcp"}}
	if !reflect.DeepEqual(st.cfg.MCPServers, want) {
		t.Errorf("merged = %+v", st.cfg.MCPServers)
	}
}
