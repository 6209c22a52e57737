package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/mcp/mcptest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe() // the test binary is also the stdio MCP server
	os.Exit(m.Run())
}

const (
	mcpServiceSecret = "svc-secret-5e1f9a7c"
	mcpHTTPSecret    = "http-secret-0b3d8e2f"
)

// mcpConfig writes a codeagent.yaml with three servers: "local" (stdio, the
// test binary, a secret in its env), "remote" (streamable HTTP behind a
// bearer token from a ${VAR}) and "broken" (exits at start).
func mcpConfig(t *testing.T) string {
	t.Helper()
	exe, _ := mcptest.Command(t, "serve")
	ts := mcptest.NewHTTP(t, mcpHTTPSecret)
	cfg := fmt.Sprintf(`mcp_servers:
  local:
    command: %q
    env:
      %s: serve
      SERVICE_TOKEN: ${SVC_TOKEN}
  remote:
    url: %s
    headers:
      Authorization: Bearer ${HTTP_TOKEN}
  broken:
    command: %q
    env:
      %s: die
`, exe, mcptest.EnvMode, ts.URL, exe, mcptest.EnvMode)
	p := filepath.Join(t.TempDir(), "codeagent.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mcpEnv(srv *llmtest.Server) map[string]string {
	env := execEnv(srv)
	env["SVC_TOKEN"], env["HTTP_TOKEN"] = mcpServiceSecret, mcpHTTPSecret
	env["CODEAGENT_REPO_MAP_TOKENS"] = "0"
	return env
}

// toolAnswers are the tool messages of a request, by the name of the call
// they answer.
func toolAnswers(req llmtest.Request) map[string]string {
	names := map[string]string{}
	out := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		if m.Role == llm.RoleTool {
			out[names[m.ToolCallID]] = m.Content
		}
	}
	return out
}

// `codingagent exec` offers the servers' tools, calls them over stdio and
// HTTP and uses an answer; a server that crashes mid-call is a tool error,
// then restarted; a server that never starts is one line and the task goes
// on; no secret reaches the output or the volumes.
func TestMCPExec(t *testing.T) {
	srv := llmtest.New(t)
	var offered []string
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		answers := toolAnswers(req)
		switch {
		case len(answers) == 0:
			for _, tl := range req.Tools {
				offered = append(offered, tl.Function.Name)
			}
			return llmtest.Calls(llmtest.Call("mcp__remote__add", map[string]int{"a": 20, "b": 22}),
				llmtest.Call("mcp__local__getenv", map[string]string{"name": "SERVICE_TOKEN"}))
		case answers["mcp__local__crash"] == "":
			return llmtest.Calls(llmtest.Call("mcp__local__crash", map[string]any{}))
		case answers["mcp__local__echo"] == "":
			return llmtest.Calls(llmtest.Call("mcp__local__echo", map[string]string{"text": "after restart"}))
		case answers["shell_exec"] == "":
			return llmtest.Calls(llmtest.Call("shell_exec", map[string]string{"command": "env | cut -d= -f1 | sort"}))
		case answers["write_file"] == "":
			var sum struct{ Sum int }
			if err := json.Unmarshal([]byte(answers["mcp__remote__add"]), &sum); err != nil {
				return llmtest.Text("add answered " + answers["mcp__remote__add"])
			}
			return llmtest.Calls(llmtest.Call("write_file", map[string]string{"path": "sum.txt", "content": fmt.Sprint(sum.Sum)}))
		}
		return llmtest.Text("Wrote the sum.")
	}))
	// In the process environment too, as in the container: the shell must
	// not pass it on.
	t.Setenv("SVC_TOKEN", mcpServiceSecret)
	vol, ws := t.TempDir(), t.TempDir()
	code, stdout, stderr := run(t, mcpEnv(srv), "exec", "add 20 and 22 with the MCP tool", "--config", mcpConfig(t),
		"--volumes", vol, "--workspace", ws)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if len(srv.Rejections()) > 0 {
		t.Fatalf("model server rejections: %v", srv.Rejections())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sum.txt")); err != nil || string(b) != "42" {
		t.Errorf("sum.txt = %q, %v", b, err)
	}
	joined := strings.Join(offered, ",")
	for _, want := range []string{"read_file", "mcp__local__echo", "mcp__local__write_note", "mcp__remote__add"} {
		if !strings.Contains(joined, want) {
			t.Errorf("offered tools lack %s: %s", want, joined)
		}
	}
	if strings.Contains(joined, "mcp__broken__") {
		t.Errorf("tools of the broken server offered: %s", joined)
	}
	var answers map[string]string
	for _, req := range srv.Requests() {
		if a := toolAnswers(req); len(a) > len(answers) {
			answers = a
		}
	}
	if answers["mcp__local__getenv"] != "SERVICE_TOKEN=[redacted]" {
		t.Errorf("getenv answer = %q", answers["mcp__local__getenv"])
	}
	if a := answers["mcp__local__crash"]; !strings.Contains(a, "failed during the call of crash") || !strings.Contains(a, "it was restarted") {
		t.Errorf("crash answer = %q", a)
	}
	if a := answers["mcp__local__echo"]; a != "echo: after restart" {
		t.Errorf("echo after the restart = %q", a)
	}
	if names := answers["shell_exec"]; !strings.Contains(names, "PATH") || strings.Contains(names, "SVC_TOKEN") {
		t.Errorf("the shell's environment names: %s", names)
	}
	var brokenLines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "broken") {
			brokenLines = append(brokenLines, l)
		}
	}
	if len(brokenLines) != 1 || !strings.Contains(brokenLines[0], "MCP server broken did not start (going on without its tools): the process ended (exit status 1) before answering the MCP handshake; stderr: mcptest starting | fatal: cannot open database /nonexistent/db.sqlite") ||
		!strings.Contains(brokenLines[0], "fatal: cannot open database") {
		t.Errorf("broken server lines = %q\nstderr:\n%s", brokenLines, stderr)
	}
	assertNoSecret(t, vol, stdout+stderr, mcpServiceSecret, mcpHTTPSecret)
}

// assertNoSecret fails when any secret is in out or in a file under dir.
func assertNoSecret(t *testing.T, dir, out string, secrets ...string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("secret %q in %s", s, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no files under %s to check", dir)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("secret %q in the output", s)
		}
	}
}

// `codingagent mcp list` shows each server, whether it started (or why
// not, in one line) and its tools with the read-only ones marked.
func TestMCPList(t *testing.T) {
	env := map[string]string{"SVC_TOKEN": mcpServiceSecret, "HTTP_TOKEN": mcpHTTPSecret}
	code, stdout, stderr := run(t, env, "mcp", "list", "--config", mcpConfig(t), "--volumes", t.TempDir())
	if code != cmdutil.ExitFailed {
		t.Errorf("exit %d, want 1 (a server did not start); stderr %s", code, stderr)
	}
	for _, want := range []string{
		"broken (stdio): not started: ", "fatal: cannot open database /nonexistent/db.sqlite\n",
		"local (stdio): started, 11 tools\n",
		"  mcp__local__echo [read-only]  Echo the text back.\n",
		"  mcp__local__write_note  Save a note.\n",
		"remote (http): started, 11 tools\n",
		"  mcp__remote__add [read-only]  Add two integers.\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("mcp list lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, mcpServiceSecret) || strings.Contains(stdout+stderr, mcpHTTPSecret) {
		t.Errorf("a secret in the output:\n%s%s", stdout, stderr)
	}

	code, stdout, _ = run(t, nil, "mcp", "list", "--volumes", t.TempDir())
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "no MCP servers configured: add mcp_servers") {
		t.Errorf("without servers: exit %d, %q", code, stdout)
	}
}

// In the chat, plan mode offers only the read-only MCP tools (a call of
// another is refused); in direct mode a read-only one runs without asking
// and the others need approval like shell_exec.
func TestMCPChatPlanModeAndApproval(t *testing.T) {
	srv := llmtest.New(t)
	offered := map[string]string{}
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		user, answered := "", 0
		for _, m := range req.Messages {
			switch m.Role {
			case llm.RoleUser:
				user, answered = m.Content, 0
			case llm.RoleTool:
				answered++
			}
		}
		phase := "direct"
		if strings.Contains(user, "look around") {
			phase = "plan"
		}
		if answered > 0 {
			return llmtest.Text("Done with " + phase + ".")
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		offered[phase] = strings.Join(names, ",")
		return llmtest.Calls(llmtest.Call("mcp__local__echo", map[string]string{"text": phase}),
			llmtest.Call("mcp__local__write_note", map[string]string{"note": phase}))
	}))
	vol, ws := t.TempDir(), t.TempDir()
	input := "/mode plan\nlook around\n/mode direct\nsave a note\nn\n/exit\n"
	code, out, stderr := runChatCmd(t, mcpEnv(srv), input, "--config", mcpConfig(t), "--volumes", vol, "--workspace", ws, "--approval", "default")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if len(srv.Rejections()) > 0 {
		t.Fatalf("model server rejections: %v", srv.Rejections())
	}
	if p := offered["plan"]; !strings.Contains(p, "mcp__local__echo") || strings.Contains(p, "mcp__local__write_note") || strings.Contains(p, "write_file") {
		t.Errorf("plan mode offered %s", p)
	}
	if d := offered["direct"]; !strings.Contains(d, "mcp__local__write_note") {
		t.Errorf("direct mode offered %s", d)
	}
	var answers []map[string]string
	for _, req := range srv.Requests() {
		if a := toolAnswers(req); len(a) > 0 {
			answers = append(answers, a)
		}
	}
	byPhase := map[string]map[string]string{}
	for _, a := range answers {
		if strings.Contains(a["mcp__local__echo"], "echo: plan") {
			byPhase["plan"] = a
		}
		if strings.Contains(a["mcp__local__echo"], "echo: direct") {
			byPhase["direct"] = a
		}
	}
	if a := byPhase["plan"]["mcp__local__write_note"]; !strings.Contains(a, "not available in plan mode") {
		t.Errorf("write_note in plan mode answered %q", a)
	}
	if a := byPhase["direct"]["mcp__local__write_note"]; !strings.Contains(a, "not run: the person declined") {
		t.Errorf("write_note in direct mode answered %q", a)
	}
	if n := strings.Count(out, "Allow mcp__local__write_note"); n != 1 {
		t.Errorf("asked %d times about write_note, want once:\n%s", n, out)
	}
	if strings.Contains(out, "Allow mcp__local__echo") {
		t.Errorf("asked about the read-only echo:\n%s", out)
	}
}

// `codingagent watch` (the container's entrypoint) takes the servers from
// CODEAGENT_MCP_SERVERS, starts them once for all its tasks, and warns once
// in its log about a server that did not start.
func TestMCPWatch(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		if a := toolAnswers(req)["mcp__local__whereami"]; a != "" {
			return llmtest.Text("The server said: " + a)
		}
		return llmtest.Calls(llmtest.Call("mcp__local__whereami", map[string]any{}))
	}))
	exe, _ := mcptest.Command(t, "serve")
	servers, err := json.Marshal(map[string]any{
		"local":  map[string]any{"command": exe, "env": map[string]string{mcptest.EnvMode: "serve"}},
		"broken": map[string]any{"command": exe, "env": map[string]string{mcptest.EnvMode: "die"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := execEnv(srv)
	env["CODEAGENT_MCP_SERVERS"] = string(servers)
	env["CODEAGENT_REPO_MAP_TOKENS"] = "0"
	f, _, errb := testFactory(env)
	root := NewCmdRoot(f)
	root.SetArgs([]string{"watch", "--volumes", dir})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	l, err := volume.New(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watcher's heartbeat", func() bool {
		m, _ := filepath.Glob(filepath.Join(l.Watchers(), "*.json"))
		return len(m) == 1
	})
	var answers []string
	for _, id := range []string{"one", "two"} {
		cmd := &protocol.Command{ID: id, RunID: "r1", Attempt: 1, Title: "ask " + id, Body: "Ask the server where it runs."}
		if err := protocol.WriteCommand(l.CommandFile(id), cmd); err != nil {
			t.Fatal(err)
		}
		var rep *protocol.Report
		waitFor(t, "the report of "+id, func() bool {
			rep, err = protocol.ReadReport(l.ReportFile(id))
			return err == nil
		})
		if rep.Status != protocol.StatusCompleted || !strings.Contains(rep.Body, "pid=") {
			t.Fatalf("report %s: %+v", id, rep)
		}
		answers = append(answers, rep.Body[strings.Index(rep.Body, "pid="):])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch: %v", err)
	}
	if answers[0] != answers[1] {
		t.Errorf("the tasks talked to different server processes: %q, %q", answers[0], answers[1])
	}
	logs := errb.String()
	// One warning for the process (the tasks' event lines are INFO).
	if n := strings.Count(logs, `"level":"WARN","msg":"MCP server broken did not start`); n != 1 {
		t.Errorf("%d warnings about the broken server, want 1:\n%s", n, logs)
	}
	for _, id := range []string{"one", "two"} {
		if b, err := os.ReadFile(l.EventsFile(id)); err != nil || !strings.Contains(string(b), "MCP server broken did not start") {
			t.Errorf("events of %s lack the broken server: %v", id, err)
		}
	}
}
