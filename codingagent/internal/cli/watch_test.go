package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
)

// syncBuffer is a bytes.Buffer safe for the watcher's logging goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testFactory(env map[string]string) (*cmdutil.Factory, *syncBuffer, *syncBuffer) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	f := &cmdutil.Factory{
		IO:     cmdutil.IOStreams{In: strings.NewReader(""), Out: out, Err: errb, IsTerminal: func() bool { return false }},
		Getenv: func(k string) string { return env[k] },
	}
	return f, out, errb
}

// run runs codingagent with args the way main does and returns the exit code.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	f, out, errb := testFactory(env)
	code := cmdutil.Main(f, NewCmdRoot(f), args)
	return code, out.String(), errb.String()
}

func TestWatchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	withKey := map[string]string{"OPENAI_API_KEY": "k"}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "no api key", args: []string{"watch", "--volumes", dir}, want: "no API key: set OPENAI_API_KEY"},
		{name: "zero concurrency", env: withKey, args: []string{"watch", "--volumes", dir, "--concurrency", "0"}, want: "--concurrency 0: must be at least 1"},
		{name: "negative poll", env: withKey, args: []string{"watch", "--volumes", dir, "--poll", "-1s"}, want: "--poll -1s: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.env, tt.args...)
			if code != cmdutil.ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// `codingagent watch` with the settings from the environment carries out a
// command against the model server and stops cleanly when cancelled.
func TestWatchCommand(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if strings.HasPrefix(req.Messages[0].Content, "You maintain the long-term memory") {
			return llmtest.Text("- none")
		}
		if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return llmtest.Text("Created hello.txt.")
		}
		return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "hello.txt", "content": "hi\n"}))
	})
	dir := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "secret-test-key", "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m"}
	f, _, errb := testFactory(env)
	root := NewCmdRoot(f)
	root.SetArgs([]string{"watch", "--volumes", dir, "--concurrency", "2"})
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
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
	cmd := &protocol.Command{ID: "hello", RunID: "r1", Attempt: 1, Title: "say hi", Body: "Write hello.txt."}
	if err := protocol.WriteCommand(l.CommandFile("hello"), cmd); err != nil {
		t.Fatal(err)
	}
	var rep *protocol.Report
	waitFor(t, "the report", func() bool {
		rep, err = protocol.ReadReport(l.ReportFile("hello"))
		return err == nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch returned %v after cancellation, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not stop")
	}
	if rep.Status != protocol.StatusCompleted || rep.Summary != "Created hello.txt." {
		t.Errorf("report: %+v", rep)
	}
	if b, err := os.ReadFile(filepath.Join(l.Workspace(), "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("workspace hello.txt = %q, %v", b, err)
	}
	logs := errb.String()
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON (stderr is not a terminal): %q", line)
		}
	}
	if strings.Contains(logs, "secret-test-key") {
		t.Error("the API key appears in the logs")
	}
	if !strings.Contains(logs, `"msg":"task done"`) {
		t.Errorf("no task done log line in %s", logs)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
