package local

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/runtime/runtimetest"
)

// heartbeatWatcher stands in for `codingagent watch --volumes DIR ...`: it
// writes a heartbeat like the real one and removes it on SIGTERM.
const heartbeatWatcher = `#!/bin/sh
dir="$3/reports/.watchers"
hb="$dir/sh-$$.json"
trap 'rm -f "$hb"; exit 0' TERM
while :; do printf '{"id":"sh-%s","updated":"%s"}\n' $$ "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$dir/.t-$$" && mv "$dir/.t-$$" "$hb"; sleep 0.05; done
`

func localLayout(t *testing.T) volume.Layout {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	return l
}

// A watcher stopped just before a restart must not have its exit reported
// as the death of the new one (each process has its own stop flag).
func TestLocalRestartDoesNotReportTheOldExit(t *testing.T) {
	t.Parallel()
	l := localLayout(t)
	bin := filepath.Join(t.TempDir(), "codingagent")
	if err := os.WriteFile(bin, []byte(heartbeatWatcher), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := New(Options{Volumes: l, Binary: bin, StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	for i := range 10 {
		if err := rt.Start(t.Context()); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if err := rt.Stop(t.Context()); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case ex := <-rt.Exited():
		t.Fatalf("a stopped watcher's exit was reported against the running one: %v", ex.Err)
	case <-time.After(300 * time.Millisecond):
	}
	// The running one's own death is still reported.
	rt.mu.Lock()
	pid := rt.proc.cmd.Process.Pid
	rt.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case ex := <-rt.Exited():
		if ex.TaskID != "" || ex.Err == nil || !strings.Contains(ex.Err.Error(), "exited") {
			t.Errorf("Exit = %+v, want the shared watcher's death", ex)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running watcher's death was not reported")
	}
}

// A watcher exits by itself only when something is wrong, even with
// status 0: Start says how it exited, not "<nil>".
func TestLocalWatcherExitingWithZeroSaysSo(t *testing.T) {
	l := localLayout(t)
	bin := filepath.Join(t.TempDir(), "codingagent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := New(Options{Volumes: l, Binary: bin, StopGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	err = rt.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "before its first heartbeat: exit status 0 ") {
		t.Errorf("Start = %v, want the watcher's exit before its first heartbeat with status 0", err)
	}
}

// TestE2ELocalRunsTaskInItsCopy: the local runtime's one watcher process
// (the real codingagent) carries each command out in the copy it names.
func TestE2ELocalRunsTaskInItsCopy(t *testing.T) {
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("builds codingagent: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	srv := llmtest.New(t, llmtest.WithKey(testKey))
	srv.Handle(runtimetest.ShellModel("echo local > made.txt && pwd -P"))
	l := localLayout(t)
	rt, err := New(Options{Volumes: l, Binary: buildCodingAgent(t), APIKey: testKey,
		Env: []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_MODEL=test-model"}, Log: runtimetest.LogWriter{T: t}, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	a := runtimetest.NewAttempt(t, l, "r1", "t1")
	if err := rt.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	rep := runtimetest.WaitReport(t, l, "t1")
	real, _ := filepath.EvalSymlinks(a.Dir)
	if rep.Status != protocol.StatusCompleted || !strings.Contains(rep.Body, real) {
		t.Fatalf("report: %s %q, want completed with the shell in %s", rep.Status, rep.Body, real)
	}
	if got, err := os.ReadFile(filepath.Join(a.Dir, "made.txt")); err != nil || string(got) != "local\n" {
		t.Errorf("made.txt in the copy: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(l.Workspace(), "made.txt")); err == nil {
		t.Error("the task wrote into the default workspace")
	}
}

// The local watcher gets a token of its own on its key pipe and the
// gateway's URL, never the key (nor in its environment); the token ends
// with the watcher.
func TestLocalWatcherGetsAGatewayToken(t *testing.T) {
	l := localLayout(t)
	seen := filepath.Join(t.TempDir(), "seen")
	script := "#!/bin/sh\n{ echo \"key=$(cat <&3)\"; env; } >" + seen + ".tmp && mv " + seen + ".tmp " + seen + "\n" +
		strings.TrimPrefix(heartbeatWatcher, "#!/bin/sh\n")
	bin := filepath.Join(t.TempDir(), "codingagent")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gw := testGateway(t)
	t.Setenv("OPENAI_API_KEY", testKey) // what the operator's shell may hold
	// planagent in a compose container: for its own URL, not the gateway's.
	t.Setenv("CODEAGENT_LOOPBACK_HOST", "host.docker.internal")
	rt, err := New(Options{Volumes: l, Binary: bin, StopGrace: 5 * time.Second, Gateway: gw,
		Env: []string{"OPENAI_BASE_URL=http://127.0.0.1:9/v1", "OPENAI_MODEL=m"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.WithoutCancel(t.Context())) })
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(seen) // written before the first heartbeat Start waited for
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	if strings.Contains(got, testKey) {
		t.Fatalf("the watcher got the key:\n%s", got)
	}
	token := regexp.MustCompile(`(?m)^key=([0-9a-f]{64})$`).FindStringSubmatch(got)
	if token == nil {
		t.Fatalf("no gateway token on the key pipe:\n%s", got)
	}
	if !strings.Contains(got, "\nOPENAI_BASE_URL="+rt.gatewayBase+"\n") || !strings.HasPrefix(rt.gatewayBase, "http://127.0.0.1:") {
		t.Errorf("the watcher's base URL is not the gateway %s on loopback:\n%s", rt.gatewayBase, got)
	}
	if strings.Contains(got, "CODEAGENT_LOOPBACK_HOST") {
		t.Errorf("the watcher would rewrite the gateway's loopback URL:\n%s", got)
	}
	if !admitted(t, rt.gatewayBase, token[1]) {
		t.Error("the running watcher's token is refused")
	}
	if err := rt.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if admitted(t, rt.gatewayBase, token[1]) {
		t.Error("the token still opens the gateway after its watcher ended")
	}
}

// testKey is the provider's key, which must reach no watcher.
const testKey = "sk-test-0123456789abcdef-SECRET"

// buildCodingAgent builds the real codingagent for this test alone.
func buildCodingAgent(t *testing.T) string {
	t.Helper()
	bin, err := runtimetest.BuildCodingAgent(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// testGateway is a real gateway to an upstream nobody answers at: the
// tests here look at who it admits, not at answers.
func testGateway(t *testing.T) *gateway.Gateway {
	t.Helper()
	gw, err := gateway.New(gateway.Options{Upstream: "http://127.0.0.1:9/v1", Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	return gw
}

// admitted tells whether the gateway at base takes token: a refused token
// is a 401; an admitted one goes on to the (absent) upstream.
func admitted(t *testing.T, base, token string) bool {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusUnauthorized
}
