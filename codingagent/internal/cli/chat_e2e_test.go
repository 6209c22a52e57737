package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestE2EChatTmux drives the built codingagent in a real terminal (a tmux
// pane): a typed question gets its answer on the screen, and /mode plan
// changes the prompt to [PLAN].
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
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for !strings.Contains(screen(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%q did not appear on the screen:\n%s", want, screen())
			}
			<-tick.C
		}
	}
	waitFor("/help lists commands")
	if out, err := tm("send-keys", "-t", "chat", "what is the answer?", "Enter"); err != nil {
		t.Fatalf("send-keys: %v\n%s", err, out)
	}
	waitFor("The answer is 42.")
	if out, err := tm("send-keys", "-t", "chat", "/mode plan", "Enter"); err != nil {
		t.Fatalf("send-keys: %v\n%s", err, out)
	}
	waitFor("[PLAN] >") // capture-pane trims the trailing space
	if out, err := tm("send-keys", "-t", "chat", "/exit", "Enter"); err != nil {
		t.Fatalf("send-keys: %v\n%s", err, out)
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Fatalf("server rejections: %v", r)
	}
}
