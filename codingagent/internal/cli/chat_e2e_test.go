package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestE2EChatTmux drives the built codingagent in a real terminal (a tmux
// pane): a typed question gets its answer on the screen, /mode plan changes
// the prompt to [PLAN] and Ctrl-P toggles it back, an approval is answered on
// the terminal, and Ctrl-C during the tool call cancels the turn only.
func TestE2EChatTmux(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("end-to-end test in tmux: set CODEAGENT_E2E=1 (make e2e) to run it")
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
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == llm.RoleUser && strings.Contains(last.Content, "run the slow thing"):
			return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "sleep 60"}))
		case last.Role == llm.RoleTool:
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
	// Ctrl-P toggles at once, without Enter, and the prompt follows.
	keys("C-p")
	waitFor("direct mode")
	waitUntil("the direct prompt after Ctrl-P", func(s string) bool { return lastLine(s) == ">" })
	// Line editing: Up recalls the previous input (not ^[[A), Ctrl-A and
	// typing edit it, Ctrl-U clears it.
	keys("Up")
	waitUntil("/mode plan recalled by Up", func(s string) bool { return lastLine(s) == "> /mode plan" })
	if strings.Contains(screen(), "^[[A") {
		t.Errorf("Up printed an escape sequence:\n%s", screen())
	}
	keys("C-a", "#")
	waitUntil("an edit at the start of the line", func(s string) bool { return lastLine(s) == "> #/mode plan" })
	keys("C-e", "C-u")
	waitUntil("the line cleared", func(s string) bool { return lastLine(s) == ">" })
	// Home, End and Delete as tmux and screen send them (ESC[1~ ESC[4~
	// ESC[3~) and xterm's application mode (ESC O H, ESC O F), byte by
	// byte as a terminal may; then tmux's own Home and DC keys.
	hex := func(seq string) {
		t.Helper()
		args := []string{"send-keys", "-t", "chat", "-H"}
		for _, b := range []byte(seq) {
			args = append(args, fmt.Sprintf("%02x", b))
		}
		if out, err := tm(args...); err != nil {
			t.Fatalf("send-keys -H %q: %v\n%s", seq, err, out)
		}
	}
	keys("abc")
	hex("\x1b[1~")
	keys("X")
	hex("\x1b[4~")
	keys("Y")
	waitUntil("Home and End as tmux sends them", func(s string) bool { return lastLine(s) == "> XabcY" })
	hex("\x1bOH")
	keys("Z")
	hex("\x1bOF")
	keys("W")
	waitUntil("Home and End in application mode", func(s string) bool { return lastLine(s) == "> ZXabcYW" })
	hex("\x1bOH")
	hex("\x1b[3~")
	keys("Home", "DC", "End", "V")
	waitUntil("Delete at the start of the line, twice", func(s string) bool { return lastLine(s) == "> abcYWV" })
	keys("C-u")
	waitUntil("the line cleared", func(s string) bool { return lastLine(s) == ">" })
	// Ctrl-R finds an older input by a word in it; Enter runs it.
	keys("C-r", "answer")
	waitUntil("the reverse search", func(s string) bool {
		return lastLine(s) == "(reverse-i-search)`answer': what is the answer?"
	})
	keys("Enter")
	waitUntil("the searched input answered", func(s string) bool { return strings.Count(s, "The answer is 42.") == 2 })
	// Ctrl-C at the prompt does not leave at once.
	keys("C-c")
	waitFor("(Ctrl-C again, Ctrl-D or /exit leaves the chat)")

	// A tool call approved on the terminal, then Ctrl-C while it runs: the
	// turn ends, the chat goes on and the next request is accepted.
	keys("run the slow thing", "Enter")
	waitFor("Allow shell_exec")
	keys("y", "Enter")
	waitFor("→ shell_exec")
	keys("C-c")
	waitFor("(interrupted")
	keys("and now?", "Enter")
	waitUntil("an answer after the interrupted turn", func(s string) bool { return strings.Count(s, "The answer is 42.") == 3 })
	if strings.Contains(screen(), "The slow thing finished.") {
		t.Errorf("the interrupted tool call was not cancelled:\n%s", screen())
	}
	keys("C-p")
	waitFor("plan mode: read-only tools")
	keys("/exit", "Enter")
	waitUntil("the chat to end", func(s string) bool { _, err := tm("has-session", "-t", "chat"); return err != nil })

	// --continue comes back in plan mode, with the workspace's history.
	if out, err := tm("new-session", "-d", "-s", "chat", "-x", "160", "-y", "40", command+" --continue"); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	waitFor("plan mode (kept from the session)")
	waitUntil("the plan prompt", func(s string) bool { return lastLine(s) == "[PLAN] >" })
	keys("Up")
	waitUntil("the last input of the earlier chat", func(s string) bool { return lastLine(s) == "[PLAN] > /exit" })
	// The approval answer "y" was not kept: the input before /exit is the
	// question asked after the interrupted turn.
	keys("Up")
	waitUntil("the input before /exit", func(s string) bool { return lastLine(s) == "[PLAN] > and now?" })
	keys("Up", "Up")
	waitUntil("the slow request, not its approval answer", func(s string) bool { return lastLine(s) == "[PLAN] > what is the answer?" })
	keys("C-u", "C-c")
	waitFor("(Ctrl-C again")
	keys("C-c")
	waitUntil("two Ctrl-C to end the chat", func(s string) bool { _, err := tm("has-session", "-t", "chat"); return err != nil })

	// SIGTERM while the prompt waits in raw mode: the terminal is given
	// back as it was (canonical mode, echo), not left raw.
	shell := "sh -c '" + command + "; stty -a | tr \" \" \"\\n\" | grep -x -e -icanon -e icanon -e -echo -e echo; sleep 60'"
	if out, err := tm("new-session", "-d", "-s", "chat", "-x", "160", "-y", "40", shell); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	waitUntil("the prompt", func(s string) bool { return strings.HasSuffix(lastLine(s), ">") })
	panePID, err := tm("list-panes", "-t", "chat", "-F", "#{pane_pid}")
	if err != nil {
		t.Fatal(err)
	}
	child, err := exec.Command("pgrep", "-P", strings.TrimSpace(panePID)).Output()
	if err != nil {
		t.Fatalf("the chat under the pane's shell %s: %v", panePID, err)
	}
	pid, _ := strconv.Atoi(strings.Fields(string(child))[0])
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitUntil("stty's report after the chat", func(s string) bool { return strings.Contains(s, "icanon") })
	if s := screen(); strings.Contains(s, "-icanon") || strings.Contains(s, "\n-echo") || !strings.Contains(s, "\necho") {
		t.Errorf("the terminal was left raw after SIGTERM:\n%s", s)
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Fatalf("server rejections: %v", r)
	}
}

// lastLine is the last non-empty line of a captured screen.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return strings.TrimRight(lines[len(lines)-1], " ")
}
