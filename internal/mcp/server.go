package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/tools"
)

// server is one configured MCP server and its current session.
type server struct {
	name    string
	cfg     config.MCPServer
	opts    *Options
	secrets []string // expanded env and header values and the variables they use

	mu        sync.Mutex
	session   *sdk.ClientSession
	done      chan struct{} // closed when session's connection ends
	stderr    *tailBuffer
	cmd       *exec.Cmd // the stdio server's current process
	restarted bool      // the one restart is used
	lastTail  string    // the stderr tail when the server was last found dead
	down      string    // why the server is gone for the rest of the process
	closed    bool
	tools     []*tool
}

func newServer(name string, cfg config.MCPServer, opts *Options) *server {
	s := &server{name: name, cfg: cfg, opts: opts}
	// Known before the first start, so shell_exec can redact them from the start.
	_, s.secrets, _ = expand(name, cfg, opts.Getenv)
	return s
}

func (s *server) secretValues() []string { return s.secrets }

// start connects and lists the tools.
func (s *server) start(ctx context.Context) ServerStatus {
	st := ServerStatus{Name: s.name, Transport: s.cfg.Transport()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.connectLocked(ctx); err != nil {
		s.down = s.describe("", err)
		st.Err = s.down
		return st
	}
	lctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	for t, err := range s.session.Tools(lctx, nil) {
		if err != nil {
			s.down = s.describe("listing its tools failed", err)
			st.Err = s.down
			_ = s.session.Close()
			s.session, s.tools = nil, nil
			return st
		}
		s.tools = append(s.tools, newTool(s, t))
	}
	st.Started = true
	return st
}

// connectLocked starts the process or opens the HTTP session.
func (s *server) connectLocked(ctx context.Context) error {
	if s.closed {
		return errors.New("the agent is shutting down")
	}
	cfg, _, err := expand(s.name, s.cfg, s.opts.Getenv)
	if err != nil {
		return err
	}
	var transport sdk.Transport
	if cfg.URL != "" {
		hc := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: cfg.Headers}}
		transport = &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, MaxRetries: 1, DisableStandaloneSSE: true}
	} else {
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Dir = s.opts.Dir
		if cfg.Cwd != "" {
			cmd.Dir = cfg.Cwd
			if !filepath.IsAbs(cfg.Cwd) && s.opts.Dir != "" {
				cmd.Dir = filepath.Join(s.opts.Dir, cfg.Cwd)
			}
		}
		cmd.Env = append([]string{}, s.opts.Environ...)
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		s.stderr = newTailBuffer(8 << 10)
		cmd.Stderr = s.stderr
		stopWithParent(cmd)
		s.cmd = cmd
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: s.opts.StopGrace}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "codeagent", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("no answer to the MCP handshake within %s", s.opts.StartTimeout)
		}
		if exit := s.exitStatus(); exit != "" {
			return fmt.Errorf("the process ended (%s) before answering the MCP handshake", exit)
		}
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(done)
	}()
	s.session, s.done = cs, done
	return nil
}

// live returns a session to call, restarting a server found dead when its
// one restart is still unused.
func (s *server) live(ctx context.Context) (*sdk.ClientSession, chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != "" {
		return nil, nil, errors.New(s.down)
	}
	select {
	case <-s.done:
		if _, err := s.restartLocked(ctx, "had stopped", errors.New("found between calls")); err != nil {
			return nil, nil, err
		}
	default:
	}
	return s.session, s.done, nil
}

// restartLocked replaces a dead session, once per process. what says what
// happened ("failed during the call of X"), cause the error seen; why, the
// line saying both, is returned either way.
func (s *server) restartLocked(ctx context.Context, what string, cause error) (why string, err error) {
	if s.session != nil {
		// Close waits for the process, so its stderr and exit status are
		// complete after it.
		_ = s.session.Close()
		s.session = nil
	}
	why = what + " (" + oneLine(cause.Error()) + ")"
	if exit := s.exitStatus(); exit != "" {
		why = what + " (the process ended: " + exit + ")"
	}
	tail := s.stderrTail()
	if s.restarted {
		s.down = fmt.Sprintf("MCP server %s %s and was already restarted once; its tools are unavailable for the rest of this run%s", s.name, why, tail)
		return why, errors.New(s.down)
	}
	s.restarted = true
	if err := s.connectLocked(ctx); err != nil {
		s.down = fmt.Sprintf("MCP server %s %s%s; the restart failed, its tools are unavailable for the rest of this run: %s",
			s.name, why, tail, s.describe("", err))
		return why, errors.New(s.down)
	}
	return why, nil
}

// exitStatus is "exit status 3" (or the signal) once the stdio server's
// process has been waited for, else "".
func (s *server) exitStatus() string {
	if s.cmd == nil || s.cmd.ProcessState == nil {
		return ""
	}
	return s.cmd.ProcessState.String()
}

// call runs one tool call. Server-side problems are error results for the
// model; only cancellation of ctx is a Go error.
func (s *server) call(ctx context.Context, remote string, args map[string]any) (tools.Result, error) {
	fail := func(format string, a ...any) (tools.Result, error) {
		return tools.Result{IsError: true, Content: tools.Redact(fmt.Sprintf(format, a...), s.allSecrets())}, nil
	}
	cs, done, err := s.live(ctx)
	if err != nil {
		return fail("%v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: remote, Arguments: args})
	if err == nil {
		return tools.Result{IsError: res.IsError, Content: tools.CapOutput(tools.Redact(render(res), s.allSecrets()), s.opts.OutputCap)}, nil
	}
	if ctx.Err() != nil {
		return tools.Result{}, fmt.Errorf("MCP tool %s/%s: %w", s.name, remote, context.Cause(ctx))
	}
	if cctx.Err() != nil {
		return fail("MCP server %s did not answer the call of %s within %s", s.name, remote, s.opts.CallTimeout)
	}
	if !lostConnection(err) && !s.ended(done) {
		return fail("MCP server %s refused the call of %s: %v", s.name, remote, err)
	}
	// The connection is gone: the process died or the HTTP server went away.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != "" || s.session != cs {
		// Another call already dealt with it.
		return fail("MCP server %s failed during the call of %s: %v", s.name, remote, err)
	}
	why, rerr := s.restartLocked(ctx, "failed during the call of "+remote, err)
	if rerr != nil {
		return fail("%v", rerr)
	}
	return fail("MCP server %s %s%s; it was restarted: call the tool again if repeating it is safe",
		s.name, why, s.lastTail)
}

// lostConnection reports whether err says the server is gone rather than
// that it answered with an error: anything that is not a JSON-RPC error,
// and the SDK's codes for a transport that failed the request (an HTTP
// server that does not answer) or a connection that is closing.
func lostConnection(err error) bool {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		return true
	}
	switch rpcErr.Code {
	case codeRejectedByTransport, codeClientClosing, codeServerClosing:
		return true
	}
	return false
}

// The SDK's own JSON-RPC codes (internal/jsonrpc2 in go-sdk v1.8.0).
const (
	codeClientClosing       = -32003
	codeServerClosing       = -32004
	codeRejectedByTransport = -32005
)

// ended reports whether the session's connection has ended, waiting
// briefly: a call's error can come just before the end is noticed.
func (s *server) ended(done chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.session != nil {
		_ = s.session.Close()
		s.session = nil
	}
}

// describe is the one line naming why the server is not usable, with the
// tail of its stderr.
func (s *server) describe(what string, err error) string {
	msg := err.Error()
	if what != "" {
		msg = what + ": " + msg
	}
	return tools.Redact(oneLine(msg), s.allSecrets()) + s.stderrTail()
}

// stderrTail is "; stderr: …" with the last lines the server wrote, or "".
// It is remembered in lastTail, since a restart replaces the buffer.
func (s *server) stderrTail() string {
	if s.stderr == nil {
		return ""
	}
	t := s.stderr.lastLines(3, 400)
	if t == "" {
		return ""
	}
	s.lastTail = "; stderr: " + tools.Redact(t, s.allSecrets())
	return s.lastTail
}

func (s *server) allSecrets() []string {
	return append(append([]string{}, s.secrets...), s.opts.Secrets...)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
