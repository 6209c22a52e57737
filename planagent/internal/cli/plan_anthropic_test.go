package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
)

// TestPlanAnthropicAPI: the planner on the anthropic api (set by
// CODEAGENT_API: the fake is not on Anthropic's host) against the strict
// fake Messages API; the plan comes from a tool_use block.
func TestPlanAnthropicAPI(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := anthropictest.New(t,
		anthropictest.Reply{Calls: []anthropictest.Call{{Name: "create_plan",
			Input: `{"title":"Docs","tasks":[{"id":"a","title":"Do it","description":"do it","dependencies":[]}]}`}}},
		anthropictest.Reply{Text: "Planned."},
	)
	f, out, errb := testFactory(map[string]string{"ANTHROPIC_API_KEY": "k-anthropic", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "claude-test",
		"CODEAGENT_API": "anthropic", "CODEAGENT_VOLUMES_DIR": filepath.Join(t.TempDir(), "volumes"), "CODEAGENT_REPO_MAP_TOKENS": "0"})
	if code := cmdutil.Main(f, NewCmdRoot(f), []string{"plan", "document the API", "--json"}); code != cmdutil.ExitOK {
		t.Fatalf("exit %d; stderr:\n%s\nfake refused: %q", code, errb, srv.Rejections())
	}
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("the fake refused: %q", rej)
	}
	if !strings.Contains(out.String(), `"title": "Docs"`) {
		t.Errorf("plan output: %s", out)
	}
	if !strings.Contains(string(srv.Bodies()[0]), `"cache_control"`) {
		t.Errorf("no cache breakpoints in the planner's request")
	}
}
