package cli

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/codingagent/internal/relay"
	"github.com/codeagent/codeagent/internal/cmdutil"
)

// `codingagent relay -- COMMAND` runs COMMAND while the relay carries a
// loopback port to a unix socket (as Main starts it from CODEAGENT_RELAY),
// and hands back COMMAND's output and exit code unchanged, 128+N for a
// signal.
func TestRelayRunsTheCommand(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "THROUGH-THE-SOCKET")
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	spec := fmt.Sprintf("127.0.0.1:%d=%s", port, sock)
	pairs, err := relay.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(t.Context(), pairs, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{relay.Env: spec}

	script := fmt.Sprintf("curl -sS --noproxy '*' http://127.0.0.1:%d/; echo; echo to-stderr >&2; exit 7", port)
	code, out, stderr := run(t, env, "relay", "--", "/bin/sh", "-c", script)
	if code != 7 || !strings.Contains(out, "THROUGH-THE-SOCKET") || strings.TrimSpace(stderr) != "to-stderr" {
		t.Errorf("exit %d, out %q, stderr %q; want 7, the socket's answer, and only the command's stderr", code, out, stderr)
	}
	code, out, stderr = run(t, env, "relay", "--", "/bin/sh", "-c", "echo ok")
	if code != 0 || out != "ok\n" || stderr != "" {
		t.Errorf("exit %d, out %q, stderr %q; want 0 and ok", code, out, stderr)
	}
	code, _, stderr = run(t, env, "relay", "--", "/bin/sh", "-c", "kill -9 $$")
	if code != 128+9 {
		t.Errorf("a command killed by SIGKILL: exit %d (stderr %q), want 137 as a shell reports it", code, stderr)
	}
	code, _, stderr = run(t, env, "relay", "--", "/no/such/command")
	if code != cmdutil.ExitFailed || !strings.Contains(stderr, "relay: start /no/such/command") {
		t.Errorf("a command that cannot start: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run(t, nil, "relay", "--", "/bin/sh", "-c", "true")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "CODEAGENT_RELAY is not set") {
		t.Errorf("without CODEAGENT_RELAY: exit %d, stderr %q; want 2 naming the variable", code, stderr)
	}
}
