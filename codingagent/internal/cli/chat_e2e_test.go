package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestE2EChatTmux drives the built codingagent in a real terminal (a tmux
// pane): a typed question gets its answer on the screen, /mode plan changes
// the prompt to [PLAN] and Ctrl-P toggles it back, an approval is answered on
// the terminal, and Ctrl-C during the tool call cancels the turn only.
func TestE2EChatTmux(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Log("end-to-end test: set CODEAGENT_E2E=1 (make e2e) to run it")
		return
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux not found: install it (apt-get install tmux; .ci/run does): %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "codingagent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/codeagent/codeagent/codingagent").CombinedOutput(); err != nil {
		t.Fatalf("build codingagent: %v\n%s", err, out)
	}
	srv := llmtest.New(t)
	srv.Handle(memoryAware(func(req openai.ChatCompletionRequest) llmtest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == openai.ChatMessageRoleUser && strings.Contains(last.Content, "run the slow thing"):
			return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "sleep 60"}))
		case last.Role == openai.ChatMessageRoleTool:
			return llmtest.Text("The slow thing finished.")
		}
		return llmtest.Text("The answer is 42.")
	}))
	vol, ws := filepath.Join(dir, "volumes"), t.TempDir()
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	command := strings.Join([]string{"env", "OPENAI_API_KEY=e2e-key", "OPENAI_BASE_URL=" + srv.URL, "OPENAI_MODEL=m",
		bin, "chat", "--volumes", vol, "--workspace", ws}, " ")
	if out, err := tm("new-session", "-d", "-s", "chat", "-x", "160", "-y", "40", command); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tm("kill-server") })

	screen := func() string {
		out, _ := tm("capture-pane", "-p", "-t", "chat")
		return out
	}
	// The screen is only observable by reading it: poll with a deadline.
	waitUntil := func(what string, ok func(screen string) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for !ok(screen()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not appear on the screen:\n%s", what, screen())
			}
			<-tick.C
		}
	}
	waitFor := func(want string) {
		t.Helper()
		waitUntil(strconv.Quote(want), func(s string) bool { return strings.Contains(s, want) })
	}
	keys := func(k ...string) {
		t.Helper()
		if out, err := tm(append([]string{"send-keys", "-t", "chat"}, k...)...); err != nil {
			t.Fatalf("send-keys %q: %v\n%s", k, err, out)
		}
	}
	waitFor("/help lists commands")
	keys("what is the answer?", "Enter")
	waitFor("The answer is 42.")
	keys("/mode plan", "Enter")
	waitFor("[PLAN] >") // capture-pane trims the trailing space
	keys("C-p", "Enter")
	waitFor("direct mode")

	// A tool call approved on the terminal, then Ctrl-C while it runs: the
	// turn ends, the chat goes on and the next request is accepted.
	keys("run the slow thing", "Enter")
	waitFor("Allow shell_exec")
	keys("y", "Enter")
	waitFor("→ shell_exec")
	keys("C-c")
	waitFor("(interrupted")
	keys("and now?", "Enter")
	waitUntil("an answer after the interrupted turn", func(s string) bool { return strings.Count(s, "The answer is 42.") == 2 })
	if strings.Contains(screen(), "The slow thing finished.") {
		t.Errorf("the interrupted tool call was not cancelled:\n%s", screen())
	}
	keys("/exit", "Enter")
	if r := srv.Rejections(); len(r) > 0 {
		t.Fatalf("server rejections: %v", r)
	}
}
