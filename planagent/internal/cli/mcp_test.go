package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe() // the test binary is also the stdio MCP server
	maybeRunPlanagent()  // and a planagent to kill (rollback_kill_test.go)
	os.Exit(m.Run())
}

// The planner is offered only the MCP tools the server marks read-only,
// calls them, and is refused the others.
func TestPlannerGetsReadOnlyMCPTools(t *testing.T) {
	t.Chdir(t.TempDir())
	exe, _ := mcptest.Command(t, "serve")
	cfg := fmt.Sprintf("mcp_servers:\n  docs:\n    command: %q\n    env: {%s: serve}\n", exe, mcptest.EnvMode)
	if err := os.WriteFile("codeagent.yaml", []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t)
	var offered []string
	answers := map[string]string{}
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		names := map[string]string{}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
			}
			if m.Role == llm.RoleTool {
				answers[names[m.ToolCallID]] = m.Content
			}
		}
		if len(answers) == 0 {
			for _, tl := range req.Tools {
				offered = append(offered, tl.Function.Name)
			}
			return llmtest.Calls(llmtest.Call("mcp__docs__echo", map[string]string{"text": "look"}),
				llmtest.Call("mcp__docs__write_note", map[string]string{"note": "x"}))
		}
		return llmtest.Calls(llmtest.Call("create_plan", `{"title":"Docs","tasks":[{"id":"a","title":"Do it","description":"do it","dependencies":[]}]}`))
	})
	f, out, errb := testFactory(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m",
		"CODEAGENT_VOLUMES_DIR": filepath.Join(t.TempDir(), "volumes"), "CODEAGENT_REPO_MAP_TOKENS": "0"})
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"plan", "document the API", "--json"}); code != cmdutil.ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errb)
	}
	if len(srv.Rejections()) > 0 {
		t.Fatalf("model server rejections: %v", srv.Rejections())
	}
	joined := strings.Join(offered, ",")
	for _, want := range []string{"read_file", "mcp__docs__echo", "mcp__docs__add", "create_plan"} {
		if !strings.Contains(joined, want) {
			t.Errorf("planner not offered %s: %s", want, joined)
		}
	}
	for _, not := range []string{"write_note", "crash", "getenv", "fail"} {
		if strings.Contains(joined, "mcp__docs__"+not) {
			t.Errorf("planner offered mcp__docs__%s: %s", not, joined)
		}
	}
	if answers["mcp__docs__echo"] != "echo: look" {
		t.Errorf("echo answer = %q", answers["mcp__docs__echo"])
	}
	if a := answers["mcp__docs__write_note"]; !strings.Contains(a, "not available to the planner") {
		t.Errorf("write_note answer = %q", a)
	}
	if !strings.Contains(out.String(), `"title": "Docs"`) {
		t.Errorf("plan output: %s", out)
	}
}

// The watcher (in the docker runtime, the task's container) gets
// mcp_servers as JSON with ${VAR} references unexpanded, and the variables.
func TestAgentEnvCarriesMCPServers(t *testing.T) {
	f, _, _ := testFactory(map[string]string{"DOCS_TOKEN": "tok-4f1e9c", "UNRELATED": "x"})
	s := &session{f: f, cfg: config.Defaults()}
	s.cfg.MCPServers = map[string]config.MCPServer{"docs": {URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}}}
	s.cfg.MCPReadOnly = []string{"mcp__docs__write"}
	env := s.agentEnv()
	if got := env[config.EnvMCPServers]; got != `{"docs":{"url":"https://h/mcp","headers":{"Authorization":"Bearer ${DOCS_TOKEN}"}}}` {
		t.Errorf("%s = %s", config.EnvMCPServers, got)
	}
	if env[config.EnvMCPReadOnly] != "mcp__docs__write" || env["DOCS_TOKEN"] != "tok-4f1e9c" || env["UNRELATED"] != "" {
		t.Errorf("env = %v", env)
	}
	// And the watcher reads it back as the same servers.
	t.Chdir(t.TempDir())
	l, err := config.Load(config.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil || l.MCPServers["docs"].Headers["Authorization"] != "Bearer ${DOCS_TOKEN}" {
		t.Fatalf("load from env: %v %+v", err, l)
	}
}
