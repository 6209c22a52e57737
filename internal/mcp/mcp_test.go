package mcp

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/mcp/mcptest"
	"github.com/codeagent/codeagent/internal/tools"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	os.Exit(m.Run())
}

func mcptestCommand(tb testing.TB) (string, map[string]string) { return mcptest.Command(tb, "serve") }

func stdio(t *testing.T, mode string, env map[string]string) config.MCPServer {
	exe, menv := mcptest.Command(t, mode)
	for k, v := range env {
		menv[k] = v
	}
	return config.MCPServer{Command: exe, Env: menv}
}

func start(t *testing.T, opts Options) (*Manager, *Status) {
	t.Helper()
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	m := New(opts)
	t.Cleanup(func() { _ = m.Close() })
	return m, m.Start(t.Context())
}

func call(t *testing.T, set *tools.Set, name, args string) tools.Result {
	t.Helper()
	res, err := tools.Call(t.Context(), set, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// Both transports list the same tools under mcp__<server>__<tool>, with the
// server's description, schema and read-only hint, and answer calls.
func TestToolsOverStdioAndHTTP(t *testing.T) {
	ts := mcptest.NewHTTP(t, "tok-123456789")
	_, st := start(t, Options{
		Servers: map[string]config.MCPServer{
			"local":  stdio(t, "serve", nil),
			"remote": {URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
		},
		Getenv: func(k string) string {
			if k == "REMOTE_TOKEN" {
				return "tok-123456789"
			}
			return ""
		},
	})
	if st.Err != nil || len(st.Failures()) > 0 {
		t.Fatalf("start: %v %v", st.Err, st.Failures())
	}
	set := tools.NewSet(st.Tools...)
	for _, srv := range []string{"local", "remote"} {
		echo, ok := set.Get("mcp__" + srv + "__echo")
		if !ok {
			t.Fatalf("no mcp__%s__echo in %v", srv, set.Names())
		}
		def := echo.Definition()
		params := def.Parameters
		if def.Description != "Echo the text back." || !strings.Contains(string(params), `"text"`) || !strings.Contains(string(params), `"type":"object"`) {
			t.Errorf("definition = %q %s", def.Description, params)
		}
		if !echo.ReadOnly() {
			t.Errorf("%s echo is readOnlyHint but not ReadOnly", srv)
		}
		if w, _ := set.Get("mcp__" + srv + "__write_note"); w.ReadOnly() {
			t.Errorf("write_note is not read-only")
		}
		if res := call(t, set, "mcp__"+srv+"__echo", `{"text":"hi"}`); res.IsError || res.Content != "echo: hi" {
			t.Errorf("%s echo = %+v", srv, res)
		}
		// Structured output reaches the model once, as JSON.
		if res := call(t, set, "mcp__"+srv+"__add", `{"a":2,"b":40}`); res.IsError || res.Content != `{"sum":42}` {
			t.Errorf("%s add = %+v", srv, res)
		}
	}
	if got := set.ReadOnly().Names(); strings.Join(got, ",") != "mcp__local__add,mcp__local__echo,mcp__local__whereami,mcp__remote__add,mcp__remote__echo,mcp__remote__whereami" {
		t.Errorf("read-only tools = %v", got)
	}
}

func TestArgumentsAndResults(t *testing.T) {
	_, st := start(t, Options{Servers: map[string]config.MCPServer{"s": stdio(t, "serve", nil)}, OutputCap: 1000})
	set := tools.NewSet(st.Tools...)
	tests := []struct {
		name, tool, args string
		isErr            bool
		want             []string
	}{
		{name: "wrong type", tool: "mcp__s__add", args: `{"a":"two","b":1}`, isErr: true, want: []string{"arguments of mcp__s__add do not match its schema", `"a"`}},
		{name: "missing required", tool: "mcp__s__echo", args: `{}`, isErr: true, want: []string{"do not match its schema", "text"}},
		{name: "not an object", tool: "mcp__s__echo", args: `[1]`, isErr: true, want: []string{"expected a JSON object"}},
		{name: "tool error", tool: "mcp__s__fail", args: `{}`, isErr: true, want: []string{"the backing service said no"}},
		{name: "image as a note", tool: "mcp__s__image", args: ``, want: []string{"a red dot:", "[image (image/png, 4 bytes) not shown"}},
		{name: "capped", tool: "mcp__s__big", args: `{"chars":50000}`, want: []string{"BEGIN", "END", "chars omitted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, set, tt.tool, tt.args)
			if res.IsError != tt.isErr {
				t.Errorf("IsError = %v, want %v: %s", res.IsError, tt.isErr, res.Content)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("result %q lacks %q", res.Content, w)
				}
			}
			if len(res.Content) > 1200 {
				t.Errorf("result of %d chars is not capped", len(res.Content))
			}
		})
	}
}

// A server that dies mid-call gives a tool error and is restarted; the next
// call works; a second death leaves its tools unavailable, as errors.
func TestCrashRestartsOnce(t *testing.T) {
	_, st := start(t, Options{Servers: map[string]config.MCPServer{"s": stdio(t, "serve", nil)}})
	set := tools.NewSet(st.Tools...)
	res := call(t, set, "mcp__s__crash", `{}`)
	if !res.IsError || !strings.Contains(res.Content, "MCP server s failed during the call of crash (the process ended: exit status 3)") ||
		!strings.Contains(res.Content, "stderr: panic: crash tool called") || !strings.Contains(res.Content, "it was restarted") {
		t.Fatalf("crash result = %+v", res)
	}
	if res := call(t, set, "mcp__s__echo", `{"text":"again"}`); res.IsError || res.Content != "echo: again" {
		t.Fatalf("after restart: %+v", res)
	}
	res = call(t, set, "mcp__s__crash", `{}`)
	if !res.IsError || !strings.Contains(res.Content, "already restarted once") {
		t.Fatalf("second crash = %+v", res)
	}
	if res := call(t, set, "mcp__s__echo", `{"text":"x"}`); !res.IsError || !strings.Contains(res.Content, "unavailable for the rest of this run") {
		t.Fatalf("after second crash: %+v", res)
	}
}

// Servers that cannot start are named in one line with their stderr tail;
// the others' tools are there. The start timeout is the default (30s): a
// busy machine may take seconds to re-exec the race-built test binary, and
// a server that dies must be told from one that hangs by its exit, not by
// the clock. The hang case has a test of its own.
func TestStartFailures(t *testing.T) {
	_, st := start(t, Options{
		Servers: map[string]config.MCPServer{
			"good":    stdio(t, "serve", nil),
			"dies":    stdio(t, "die", nil),
			"missing": {Command: "/nonexistent/mcp-server"},
			"novar":   {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${NOT_SET_TOKEN}"}},
			"refused": {URL: "http://127.0.0.1:1/mcp"},
		},
	})
	fails := strings.Join(st.Failures(), "\n")
	for _, want := range []string{
		"MCP server dies did not start (going on without its tools): the process ended (exit status 1) before answering the MCP handshake",
		"stderr: mcptest starting | fatal: cannot open database /nonexistent/db.sqlite",
		"MCP server missing did not start", "/nonexistent/mcp-server",
		"environment variable NOT_SET_TOKEN (used in mcp_servers.novar.headers.Authorization) is not set",
		"MCP server refused did not start",
	} {
		if !strings.Contains(fails, want) {
			t.Errorf("failures lack %q:\n%s", want, fails)
		}
	}
	if n := len(st.Failures()); n != 4 {
		t.Errorf("%d failure lines, want 4:\n%s", n, fails)
	}
	for _, line := range st.Failures() {
		if strings.Contains(line, "\n") {
			t.Errorf("failure is not one line: %q", line)
		}
	}
	if len(st.Tools) == 0 || !strings.HasPrefix(st.Tools[0].Name(), "mcp__good__") {
		t.Errorf("tools = %v", tools.NewSet(st.Tools...).Names())
	}
}

// A server that never answers the handshake is given up on at the start
// timeout, named in one line; the run goes on. Alone, so a short timeout
// only has to outlast nothing but this one hang: under load, a slow start
// of the process only makes it hang longer.
func TestStartHangs(t *testing.T) {
	// The server never answers, so the timeout fires however loaded the
	// machine; the stop grace only shortens the test's wait for its end.
	_, st := start(t, Options{Servers: map[string]config.MCPServer{"hangs": stdio(t, "hang", nil)},
		StartTimeout: 200 * time.Millisecond, StopGrace: 100 * time.Millisecond})
	fails := strings.Join(st.Failures(), "\n")
	for _, want := range []string{"MCP server hangs did not start", "no answer to the MCP handshake within 200ms"} {
		if !strings.Contains(fails, want) {
			t.Errorf("failures lack %q:\n%s", want, fails)
		}
	}
	if n := len(st.Failures()); n != 1 || strings.Contains(fails, "\n") || len(st.Tools) != 0 {
		t.Errorf("%d failure lines, %d tools, want one line and none:\n%s", n, len(st.Tools), fails)
	}
}

// Names too long are cut at 64; two tools ending up with one name refuse
// the whole set with an error naming both.
func TestNamesAndCollisions(t *testing.T) {
	if n := ToolName("srv", "a.b/c"); n != "mcp__srv__a_b_c" {
		t.Errorf("ToolName = %q", n)
	}
	long := strings.Repeat("s", 30)
	if n := ToolName(long, "report_status_of_the_current_build_alpha"); n != "mcp__"+long+"__report_status_of_the_curren" {
		t.Errorf("ToolName = %q (%d chars)", n, len(n))
	}
	exe, env := mcptest.Command(t, "serve")
	_, st := start(t, Options{Servers: map[string]config.MCPServer{"short": {Command: exe, Env: env}}})
	if _, ok := tools.NewSet(st.Tools...).Get("mcp__short__report_status_of_the_current_build_alpha"); st.Err != nil || !ok {
		t.Fatalf("short server: %v", st.Err)
	}
	_, st = start(t, Options{Servers: map[string]config.MCPServer{long: {Command: exe, Env: env}}})
	if st.Err == nil || !strings.Contains(st.Err.Error(), "MCP tool names collide") ||
		!strings.Contains(st.Err.Error(), long+"/report_status_of_the_current_build_alpha and "+long+"/report_status_of_the_current_build_beta") ||
		!strings.Contains(st.Err.Error(), "rename a server") || len(st.Tools) != 0 {
		t.Fatalf("collision: err %v, %d tools", st.Err, len(st.Tools))
	}
}

// mcp_read_only adds tools by name or by server; unknown names warn.
func TestReadOnlyConfig(t *testing.T) {
	_, st := start(t, Options{
		Servers:  map[string]config.MCPServer{"a": stdio(t, "serve", nil), "b": stdio(t, "serve", nil)},
		ReadOnly: []string{"mcp__a__write_note", "b", "mcp__zzz__x"},
	})
	set := tools.NewSet(st.Tools...)
	for name, want := range map[string]bool{"mcp__a__write_note": true, "mcp__a__crash": false, "mcp__b__crash": true, "mcp__a__echo": true} {
		tl, _ := set.Get(name)
		if tl.ReadOnly() != want {
			t.Errorf("%s ReadOnly = %v, want %v", name, tl.ReadOnly(), want)
		}
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], `"mcp__zzz__x" names no configured server`) {
		t.Errorf("warnings = %v", st.Warnings)
	}
}

// Secrets from env and headers never come back in a result or a message,
// and the model's API key is not in a server's environment.
func TestSecretsRedacted(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-model-key-123456")
	t.Setenv("CODEAGENT_MCP_SERVERS", `{"other":{"url":"http://h/mcp","headers":{"A":"other-secret"}}}`)
	m, st := start(t, Options{
		Servers: map[string]config.MCPServer{"s": stdio(t, "serve", map[string]string{"SERVICE_TOKEN": "${SVC}"})},
		Getenv: func(k string) string {
			if k == "SVC" {
				return "svc-secret-987654"
			}
			return ""
		},
	})
	set := tools.NewSet(st.Tools...)
	if res := call(t, set, "mcp__s__getenv", `{"name":"SERVICE_TOKEN"}`); res.Content != "SERVICE_TOKEN=[redacted]" {
		t.Errorf("getenv SERVICE_TOKEN = %q", res.Content)
	}
	if res := call(t, set, "mcp__s__getenv", `{"name":"OPENAI_API_KEY"}`); res.Content != "OPENAI_API_KEY=" {
		t.Errorf("the server sees the model key: %q", res.Content)
	}
	if res := call(t, set, "mcp__s__getenv", `{"name":"CODEAGENT_MCP_SERVERS"}`); res.Content != "CODEAGENT_MCP_SERVERS=" {
		t.Errorf("the server sees the servers' settings: %q", res.Content)
	}
	if s := strings.Join(m.Secrets(), ","); !strings.Contains(s, "svc-secret-987654") {
		t.Errorf("Secrets() = %q", s)
	}
}

// An HTTP server that goes away is a tool error (the reconnect fails, so
// its tools are unavailable), never a crash.
func TestHTTPServerGone(t *testing.T) {
	ts := mcptest.NewHTTP(t, "")
	_, st := start(t, Options{Servers: map[string]config.MCPServer{"web": {URL: ts.URL}}})
	set := tools.NewSet(st.Tools...)
	if res := call(t, set, "mcp__web__echo", `{"text":"up"}`); res.IsError {
		t.Fatalf("echo: %+v", res)
	}
	ts.CloseClientConnections()
	ts.Close()
	res := call(t, set, "mcp__web__echo", `{"text":"down"}`)
	if !res.IsError || !strings.Contains(res.Content, "MCP server web failed during the call of echo") ||
		!strings.Contains(res.Content, "the restart failed") {
		t.Fatalf("after the server went away: %+v", res)
	}
	if res := call(t, set, "mcp__web__add", `{"a":1,"b":2}`); !res.IsError || !strings.Contains(res.Content, "unavailable for the rest of this run") {
		t.Fatalf("later call: %+v", res)
	}
}
