package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// TestWatchProcess is the child of TestWatchSIGTERM: it runs codingagent
// with the arguments after "--" when CODINGAGENT_TEST_CHILD is set, and does
// nothing otherwise.
func TestWatchProcess(t *testing.T) {
	if os.Getenv("CODINGAGENT_TEST_CHILD") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(Main(args))
}

// A real SIGTERM to a real `codingagent watch` process: it stops claiming,
// lets the running task finish within the grace period, writes its report,
// removes its heartbeat and exits 0.
func TestWatchSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: re-execs the test binary as a watcher and waits out a 2s model reply after SIGTERM (make test runs it)")
	}
	srv := llmtest.New(t)
	asked := make(chan struct{}, 1)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if strings.HasPrefix(req.Messages[0].Content, "You maintain the long-term memory") {
			return llmtest.Text("- none")
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		return llmtest.Reply{Content: "Done slowly.", Delay: 2 * time.Second}
	})
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestWatchProcess$", "--", "watch", "--volumes", dir)
	cmd.Env = append(os.Environ(), "CODINGAGENT_TEST_CHILD=1", "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL, "OPENAI_MODEL=m")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l, err := volume.New(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watcher's heartbeat", func() bool {
		m, _ := filepath.Glob(filepath.Join(l.Watchers(), "*.json"))
		return len(m) == 1
	})
	if err := protocol.WriteCommand(l.CommandFile("slow"), &protocol.Command{ID: "slow", RunID: "r1", Attempt: 1, Title: "slow"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatalf("the task never reached the model; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch exited with %v after SIGTERM, want 0; stderr:\n%s", err, stderr.String())
	}
	rep, err := protocol.ReadReport(l.ReportFile("slow"))
	if err != nil || rep.Status != protocol.StatusCompleted {
		t.Fatalf("report after SIGTERM: %+v, %v; want completed within the grace period", rep, err)
	}
	if m, _ := filepath.Glob(filepath.Join(l.Watchers(), "*.json")); len(m) != 0 {
		t.Errorf("heartbeat left after a graceful stop: %v", m)
	}
}
