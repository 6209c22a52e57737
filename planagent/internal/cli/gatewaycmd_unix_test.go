package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// syncBuffer is stderr written by the command's goroutines and read by
// the test.
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

// `planagent gateway --unix --egress-unix`, as the compose file runs it
// for a watcher with no network: the model API on one socket, answered
// with the token and refused without it, the real key going only to the
// model server; the egress proxy on the other, tunnelling to an allowed
// host and refusing any other with a JSON line on stderr and in the
// --refusals file.
func TestGatewayCommandServesUnixSockets(t *testing.T) {
	t.Chdir(t.TempDir())
	const key = "sk-the-provider-key-0123456789abcdef"
	token := strings.Repeat("7", 64)
	model := llmtest.New(t, llmtest.WithKey(key))
	model.Enqueue(llmtest.Text("through the socket"))
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "allowed host reached")
	}))
	t.Cleanup(allowed.Close)
	port := allowed.Listener.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	gwSock, proxySock := filepath.Join(dir, "gateway.sock"), filepath.Join(dir, "proxy.sock")
	refusalsFile := filepath.Join(t.TempDir(), "refusals.jsonl")
	// A socket left by a killed gateway is replaced, not an error.
	if l, err := net.Listen("unix", gwSock); err != nil {
		t.Fatal(err)
	} else {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		_ = l.Close()
	}

	errb := &syncBuffer{}
	f, _, _ := testFactory(map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": model.URL, "OPENAI_MODEL": "test-model",
		GatewayTokenEnv: token})
	f.IO.Err = errb
	root := NewCmdRoot(f)
	root.SetArgs([]string{"gateway", "--unix", gwSock, "--egress-unix", proxySock,
		"--egress", fmt.Sprintf("allowed.test:%d", port), "--egress-hosts", "allowed.test=127.0.0.1", "--refusals", refusalsFile})
	root.SetOut(io.Discard)
	root.SetErr(errb)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
		for _, p := range []string{gwSock, proxySock} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s is left after the gateway stopped", p)
			}
		}
	})
	waitFor(t, done, errb, "egress proxy on unix:")

	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", gwSock)
	}}, Timeout: time.Minute}
	chat := func(auth string) (int, string) {
		t.Helper()
		body := `{"model":"test-model","messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://gateway/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := overSocket.Do(req)
		if err != nil {
			t.Fatalf("a request on the gateway's socket: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := chat(""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s, want 401", code, body)
	}
	if code, body := chat(strings.Repeat("8", 64)); code != http.StatusUnauthorized {
		t.Errorf("with another token: %d %s, want 401", code, body)
	}
	if code, body := chat(token); code != http.StatusOK || !strings.Contains(body, "through the socket") {
		t.Errorf("with the token: %d %s, want the model's answer", code, body)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("the model server got %d requests, want the one with the token", n)
	}
	if r := model.Rejections(); len(r) != 0 {
		t.Errorf("the model server rejected %v (the real key must replace the token)", r)
	}

	// Through the proxy socket: a tunnel to the allowed name, a 403 for another.
	code, body := connect(t, proxySock, fmt.Sprintf("allowed.test:%d", port))
	if code != http.StatusOK || body != "allowed host reached" {
		t.Errorf("CONNECT allowed.test: %d %q, want 200 and the host's answer", code, body)
	}
	code, _ = connect(t, proxySock, fmt.Sprintf("denied.test:%d", port))
	if code != http.StatusForbidden {
		t.Errorf("CONNECT denied.test: %d, want 403", code)
	}
	code, _ = connect(t, proxySock, fmt.Sprintf("127.0.0.1:%d", port))
	if code != http.StatusForbidden {
		t.Errorf("CONNECT to the host's loopback by address: %d, want 403", code)
	}
	var refusals []map[string]any
	for line := range strings.Lines(errb.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "egress refused" {
			refusals = append(refusals, rec)
		}
	}
	if len(refusals) != 2 || refusals[0]["host"] != "denied.test" || refusals[0]["method"] != "CONNECT" || refusals[1]["host"] != "127.0.0.1" {
		t.Errorf("refusals logged %v, want denied.test then 127.0.0.1 as JSON lines; stderr:\n%s", refusals, errb)
	}
	if strings.Contains(errb.String(), key) {
		t.Errorf("stderr holds the key:\n%s", errb)
	}
	// The same refusals in the file, written before each 403 went out.
	data, err := os.ReadFile(refusalsFile)
	if err != nil {
		t.Fatal(err)
	}
	var inFile []string
	for line := range strings.Lines(string(data)) {
		var rec struct {
			Time   time.Time `json:"time"`
			Method string    `json:"method"`
			Host   string    `json:"host"`
			Port   int       `json:"port"`
			Reason string    `json:"reason"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Time.IsZero() || rec.Port != port || rec.Reason == "" {
			t.Errorf("refusals file line %q: %v", line, err)
		}
		inFile = append(inFile, rec.Method+" "+rec.Host)
	}
	if got := strings.Join(inFile, ","); got != "CONNECT denied.test,CONNECT 127.0.0.1" {
		t.Errorf("the refusals file has %q, want denied.test then 127.0.0.1", got)
	}
}

// waitFor waits until stderr says want, failing early if the command ended.
func waitFor(t *testing.T, done <-chan error, errb *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(errb.String(), want) {
		select {
		case err := <-done:
			t.Fatalf("the gateway ended before serving: %v\n%s", err, errb)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr after a minute:\n%s", want, errb)
		}
	}
}

// connect opens a CONNECT tunnel to target through the proxy on sock and,
// when admitted, asks it for / over plain http; it returns the proxy's
// status and the body the target answered.
func connect(t *testing.T, sock, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial the proxy socket: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return resp.StatusCode, ""
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	got, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET through the tunnel to %s: %v", target, err)
	}
	defer got.Body.Close()
	b, _ := io.ReadAll(got.Body)
	return resp.StatusCode, string(b)
}

// The egress settings of `planagent gateway` that would leave the watcher's
// network other than asked are refused with the fix.
func TestGatewayCommandRefusesEgressWithoutProxy(t *testing.T) {
	t.Chdir(t.TempDir())
	env := map[string]string{"OPENAI_API_KEY": "sk-the-provider-key-0123456789abcdef", GatewayTokenEnv: strings.Repeat("a", 64)}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"allow-list without a proxy", []string{"gateway", "--addr", "127.0.0.1:0", "--egress", "pypi.org"}, "give --egress-unix"},
		{"open with a proxy", []string{"gateway", "--unix", "/nonexistent/g.sock", "--egress-unix", "/nonexistent/p.sock", "--egress", "open"}, "drop --egress-unix"},
		{"nothing to listen on", []string{"gateway", "--addr", ""}, "give --addr"},
		{"a refusals file without a proxy", []string{"gateway", "--addr", "127.0.0.1:0", "--refusals", "r.jsonl"}, "--refusals is the egress proxy's file"},
		{"a bad entry", []string{"gateway", "--unix", "/nonexistent/g.sock", "--egress-unix", "/nonexistent/p.sock", "--egress", "not a host!"}, "egress entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, errb := testFactory(env)
			code := cmdutil.Main(f, NewCmdRoot(f), tc.args)
			if code != cmdutil.ExitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q", code, errb, tc.want)
			}
		})
	}
}
