package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest/anthropictest"
)

// TestExecAnthropicAPI: the whole agent (tools, memory distillation,
// session) on the anthropic api against the strict fake Messages API, the
// key from ANTHROPIC_API_KEY; every request carries cache breakpoints and
// the fake accepts every one.
func TestExecAnthropicAPI(t *testing.T) {
	srv := anthropictest.New(t,
		anthropictest.Reply{Text: "Writing it.", Calls: []anthropictest.Call{{Name: "write_file", Input: `{"path":"hello.txt","content":"hi\n"}`}}},
		anthropictest.Reply{Text: "Created hello.txt."},
		anthropictest.Reply{Text: "- hello.txt holds the greeting."},
	)
	env := map[string]string{"ANTHROPIC_API_KEY": execKey, "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "claude-test",
		"CODEAGENT_API": "anthropic", "CODEAGENT_RETRIES": "0"}
	vol, ws := t.TempDir(), t.TempDir()
	code, stdout, stderr := run(t, env, "exec", "Write hello.txt", "--volumes", vol, "--workspace", ws, "--json")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q, fake refused %q", code, stderr, srv.Rejections())
	}
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("the fake refused: %q", rej)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	if !strings.Contains(stdout, "Created hello.txt.") {
		t.Errorf("no final answer in %s", stdout)
	}
	bodies := srv.Bodies()
	if len(bodies) < 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, b := range bodies {
		if !strings.Contains(string(b), `"cache_control"`) {
			t.Errorf("request %d has no cache breakpoint", i)
		}
	}
	if strings.Contains(stdout+stderr, execKey) {
		t.Error("the key leaked into the output")
	}
}
