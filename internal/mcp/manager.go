// Package mcp offers the tools of Model Context Protocol servers (the
// mcp_servers setting) as tools.Tool values named mcp__<server>__<tool>, so
// the agent loop, the planner and the chat use them like the built-in tools.
// Servers start once per process, on first use and in parallel; a server
// that dies is restarted once; Close stops them all.
package mcp

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/tools"
)

// Options configures a Manager. Zero values take the defaults.
type Options struct {
	Servers map[string]config.MCPServer
	// ReadOnly names more tools plan mode and the planner may use: exposed
	// names (mcp__<server>__<tool>) or server names (all their tools).
	ReadOnly []string
	// Dir is the workspace root: a stdio server's working directory when it
	// names none, and the base of a relative cwd.
	Dir string
	// Getenv expands ${VAR} references; nil means os.Getenv.
	Getenv func(string) string
	// Environ is the base environment of stdio servers; nil means this
	// process's environment without OPENAI_API_KEY and
	// CODEAGENT_MCP_SERVERS (a third-party server has no business with the
	// model's key, nor with the other servers' settings).
	Environ []string
	// OutputCap is the most characters of one result kept (30000).
	OutputCap int
	// StartTimeout bounds starting one server and listing its tools (30s).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call (5m).
	CallTimeout time.Duration
	// StopGrace is how long a stdio server has to exit once its stdin is
	// closed, before SIGTERM (and as long again before SIGKILL) (2s).
	StopGrace time.Duration
	// Secrets are replaced by [redacted] in results and messages, besides
	// the servers' own env and header values.
	Secrets []string
}

// Manager owns the configured servers of one process.
type Manager struct {
	opts    Options
	servers []*server // sorted by name

	once   sync.Once
	status *Status
}

// Status is the outcome of starting the servers.
type Status struct {
	Servers []ServerStatus // sorted by name
	// Tools are the tools of every server that started.
	Tools []tools.Tool
	// Err is a problem that refuses the whole set (two tools with the same
	// model-facing name); Tools is empty then.
	Err error
	// Warnings are problems worth a line that do not stop anything (an
	// mcp_read_only entry naming no tool).
	Warnings []string
}

// ServerStatus says how one server's start went.
type ServerStatus struct {
	Name      string
	Transport string // "stdio" or "http"
	Started   bool
	// Err says why it did not start, in one line with its stderr tail.
	Err   string
	Tools []ToolInfo
}

// ToolInfo describes one offered tool.
type ToolInfo struct {
	Name        string // mcp__<server>__<tool>
	Remote      string // the server's own name for it
	Description string
	ReadOnly    bool
}

// New returns a manager; nothing starts until Start.
func New(opts Options) *Manager {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Environ == nil {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OPENAI_API_KEY=") && !strings.HasPrefix(kv, config.EnvMCPServers+"=") {
				opts.Environ = append(opts.Environ, kv)
			}
		}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 5 * time.Minute
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 2 * time.Second
	}
	m := &Manager{opts: opts}
	names := make([]string, 0, len(opts.Servers))
	for n := range opts.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m.servers = append(m.servers, newServer(n, opts.Servers[n], &m.opts))
	}
	return m
}

// Empty reports whether no server is configured.
func (m *Manager) Empty() bool { return m == nil || len(m.servers) == 0 }

// Start starts every server in parallel, once per Manager; later calls
// return the first outcome. A server that fails is named in its
// ServerStatus and the others go on.
func (m *Manager) Start(ctx context.Context) *Status {
	if m.Empty() {
		return &Status{}
	}
	m.once.Do(func() { m.status = m.start(ctx) })
	return m.status
}

func (m *Manager) start(ctx context.Context) *Status {
	st := &Status{Servers: make([]ServerStatus, len(m.servers))}
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.Servers[i] = s.start(ctx)
		}()
	}
	wg.Wait()

	allowed := make(map[string]bool)
	for _, n := range m.opts.ReadOnly {
		allowed[strings.TrimSpace(n)] = true
	}
	exposed := make(map[string]bool)
	owner := make(map[string]string) // exposed name → server/tool, to name both sides of a collision
	var collisions []string
	for i, s := range m.servers {
		if !st.Servers[i].Started {
			continue
		}
		for _, t := range s.tools {
			t.readOnly = t.readOnly || allowed[t.name] || allowed[s.name]
			exposed[t.name] = true
			if prev, dup := owner[t.name]; dup {
				collisions = append(collisions, fmt.Sprintf("%s (from %s and %s/%s)", t.name, prev, s.name, t.remote))
				continue
			}
			owner[t.name] = s.name + "/" + t.remote
			st.Tools = append(st.Tools, t)
			st.Servers[i].Tools = append(st.Servers[i].Tools, ToolInfo{Name: t.name, Remote: t.remote,
				Description: t.description, ReadOnly: t.readOnly})
		}
	}
	if len(collisions) > 0 {
		st.Tools = nil
		st.Err = fmt.Errorf("MCP tool names collide after the mcp__<server>__<tool> naming and the 64-character limit: %s; "+
			"rename a server in mcp_servers so every tool name is unique", strings.Join(collisions, "; "))
	}
	for _, n := range m.opts.ReadOnly {
		if n = strings.TrimSpace(n); n != "" && !exposed[n] && !m.known(n) {
			st.Warnings = append(st.Warnings, fmt.Sprintf("mcp_read_only: %q names no configured server and no tool of a started one", n))
		}
	}
	return st
}

// known reports whether n is a configured server's name.
func (m *Manager) known(n string) bool {
	for _, s := range m.servers {
		if s.name == n {
			return true
		}
	}
	return false
}

// Secrets are the servers' env and header values after expansion, for
// shell_exec to redact as it does the API key.
func (m *Manager) Secrets() []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, s := range m.servers {
		out = append(out, s.secretValues()...)
	}
	return out
}

// Close stops every server that runs, in parallel.
func (m *Manager) Close() error {
	if m == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	return nil
}

// Failures are one line per server that did not start.
func (st *Status) Failures() []string {
	var out []string
	for _, s := range st.Servers {
		if !s.Started {
			out = append(out, fmt.Sprintf("MCP server %s did not start (going on without its tools): %s", s.Name, s.Err))
		}
	}
	return out
}
