//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

const mcpE2ESecret = "mcp-e2e-token-7c1d9e2a4b"

// mcpRun is one `planagent run` whose single task asks an MCP server
// "box" (a stdio server with SERVICE_TOKEN: ${E2E_MCP_TOKEN} in its env)
// where it runs and what SERVICE_TOKEN it got, then lists the names in
// its shell's environment.
type mcpRun struct {
	e            *runEnv
	plannerTools string // offered to the planner, comma-separated
	session      string // the task's session file
}

func newMCPRun(t *testing.T, e *runEnv, f *fakeModel) *mcpRun {
	t.Helper()
	f.setScript(`{"title":"Ask the box","tasks":[{"id":"ask","title":"Ask the MCP server","description":"TOKEN-MCP: ask the box where it runs","dependencies":[]}]}`,
		[]scriptTask{{token: "TOKEN-MCP", steps: []llmtest.ToolCall{
			llmtest.Call("mcp__box__whereami", map[string]any{}),
			llmtest.Call("mcp__box__getenv", map[string]string{"name": "SERVICE_TOKEN"}),
			llmtest.Call("shell_exec", map[string]string{"command": "env | cut -d= -f1 | sort | tr '\\n' ' '"}),
		}}})
	r := &mcpRun{e: e}
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if hasTool(req, "create_plan") && r.plannerTools == "" {
			var names []string
			for _, tl := range req.Tools {
				names = append(names, tl.Function.Name)
			}
			r.plannerTools = strings.Join(names, ",")
		}
		return f.handle(req)
	})
	// The server is a static program in the workspace, so the same relative
	// command works on the host (the planner) and in a container (the agent).
	ws := filepath.Join(e.volumes, "workspace")
	build := exec.Command("go", "build", "-o", filepath.Join(ws, ".mcp", "server"), "github.com/codeagent/codeagent/internal/mcp/mcptest/testdata/server")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the MCP server: %v\n%s", err, out)
	}
	cfg := "mcp_servers:\n  box:\n    command: ./.mcp/server\n    env:\n      SERVICE_TOKEN: ${E2E_MCP_TOKEN}\n"
	if err := os.WriteFile(filepath.Join(e.dir, "codeagent.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "E2E_MCP_TOKEN="+mcpE2ESecret)
	return r
}

// run runs planagent with the runtime and checks what holds for both: the
// planner got only the read-only tool, the server got the variable, the
// model's shell did not, and the secret is in no file and no output.
func (r *mcpRun) run(t *testing.T, rt string) {
	t.Helper()
	out, stderr, code := r.e.run("run", "--runtime", rt, "--yes", "--json", "ask the box")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if rej := r.e.srv.Rejections(); len(rej) != 0 {
		t.Errorf("the strict server rejected requests: %v", rej)
	}
	if !strings.Contains(r.plannerTools, "mcp__box__whereami") || strings.Contains(r.plannerTools, "mcp__box__getenv") {
		t.Errorf("planner offered %s; want the read-only whereami and not getenv", r.plannerTools)
	}
	r.session = r.e.read(filepath.Join("context", "sessions", sessionFile(t, r.e.volumes, "ask")))
	if !strings.Contains(r.session, "SERVICE_TOKEN=[redacted]") {
		t.Errorf("the server did not get SERVICE_TOKEN (or it was not redacted):\n%s", r.session)
	}
	if !strings.Contains(r.session, "HOSTNAME") && !strings.Contains(r.session, "PATH") ||
		strings.Contains(r.session, "E2E_MCP_TOKEN") || strings.Contains(r.session, "CODEAGENT_MCP_SERVERS") {
		t.Errorf("the shell's environment names are not as expected:\n%s", r.session)
	}
	assertNoKey(t, r.e.volumes, mcpE2ESecret)
	if strings.Contains(out+stderr, mcpE2ESecret) {
		t.Errorf("the MCP secret is in planagent's output")
	}
}

// TestE2EDockerMCPInContainer: with the docker runtime the task's agent
// starts the stdio MCP server inside the task's container (its host name is
// the container's, its directory the mounted workspace); the planner, on
// the host, starts its own copy.
func TestE2EDockerMCPInContainer(t *testing.T) {
	cli := dockerE2E(t)
	f := &fakeModel{}
	e := newDockerRunEnv(t, f)
	r := newMCPRun(t, e, f)
	watch := watchContainers(t, cli, layout.LabelVolumes+"="+e.volumes)
	r.run(t, "docker")
	created := watch.settled(t)
	inContainer := false
	for _, id := range created {
		// The attempt's container, in the attempt's copy of the workspace.
		inContainer = inContainer || strings.Contains(r.session, "host="+id[:12]+" cwd=/codeagent/volumes/attempts/")
	}
	if !inContainer {
		t.Errorf("whereami did not answer from a container of the run (%v) in its workspace:\n%s", created, r.session)
	}
}

// TestE2ELocalMCP: with the local runtime the watcher starts the server on
// this machine, in the workspace.
func TestE2ELocalMCP(t *testing.T) {
	f := &fakeModel{}
	e := newRunEnv(t, f)
	r := newMCPRun(t, e, f)
	r.run(t, "local")
	host, _ := os.Hostname()
	ws, _ := filepath.EvalSymlinks(filepath.Join(e.volumes, "workspace"))
	if !strings.Contains(r.session, "host="+host+" cwd="+ws+" pid=") {
		t.Errorf("whereami did not answer from this machine in %s:\n%s", ws, r.session)
	}
}
