package docker

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
)

func closedDocker(t *testing.T, network string, refused func(string, int, egress.Refusal)) (*Docker, error) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := egress.Parse([]string{"allowed.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newDocker(Options{RunID: "r1", Volumes: l, Network: network, Egress: pol, Gateway: testGateway(t),
		Env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_API_KEY": testKey}, EgressRefused: refused})
}

// Closed egress: no network at all, no host alias, the relay's settings in
// the environment; a network the user named is refused with the fix.
func TestClosedEgressContainerHasNoNetwork(t *testing.T) {
	d, err := closedDocker(t, "bridge", nil)
	if err != nil {
		t.Fatal(err)
	}
	d.gatewayBase = "http://" + relayGateway + d.opts.Gateway.Path()
	opts := d.createOptions(spec{name: "x", role: "attempt", env: d.containerEnv("tok")})
	if opts.HostConfig.NetworkMode != "none" || len(opts.HostConfig.ExtraHosts) != 0 {
		t.Errorf("network %q extra hosts %v, want none and no host alias", opts.HostConfig.NetworkMode, opts.HostConfig.ExtraHosts)
	}
	env := opts.Config.Env
	for _, want := range []string{"HTTPS_PROXY=http://" + relayProxy, "http_proxy=http://" + relayProxy,
		"CODEAGENT_RELAY=" + relayGateway + "=" + relayDir + "/" + gatewaySock + "," + relayProxy + "=" + relayDir + "/" + proxySock,
		"OPENAI_BASE_URL=http://" + relayGateway + d.opts.Gateway.Path(), "OPENAI_API_KEY=tok"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	if _, err := closedDocker(t, "host", nil); err == nil || !strings.Contains(err.Error(), "egress: open") {
		t.Errorf("network host with closed egress: %v, want a refusal naming egress: open", err)
	}
}

// A container's sockets: the proxy refuses what the list does not hold and
// says which task asked; the gateway answers on its own socket; close
// removes both.
func TestOpenNetServesTheProxyAndGatewayOnSockets(t *testing.T) {
	var mu sync.Mutex
	var got []string
	d, err := closedDocker(t, "", func(task string, attempt int, r egress.Refusal) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s.%d %s", task, attempt, r.Host))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.openNet(netAttempt, "t1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if m := n.mounts(); len(m) != 1 || m[0].Target != relayDir || !m[0].ReadOnly {
		t.Fatalf("mounts %+v", m)
	}
	dial := func(sock string) net.Conn {
		c, err := net.Dial("unix", filepath.Join(n.dir, sock))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := dial(proxySock)
	fmt.Fprint(c, "CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT metadata: %v %v", resp, err)
	}
	c = dial(gatewaySock)
	fmt.Fprint(c, "GET "+d.opts.Gateway.Path()+"/models HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("gateway without a token: %v %v", resp, err)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != "t1.2 169.254.169.254" {
		t.Errorf("refusals heard: %q", got)
	}
	mu.Unlock()
	n.close()
	if _, err := net.Dial("unix", filepath.Join(n.dir, proxySock)); err == nil {
		t.Error("the proxy socket still answers after close")
	}
}

// A keyless model server on loopback is reached through the proxy as the
// host alias: ownEgress names exactly its port.
func TestOwnEgressAdmitsTheModelWithoutGateway(t *testing.T) {
	pol, _ := egress.Parse(nil, nil)
	p, err := ownEgress(pol, map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Entries(), " "); got != dockerHostAlias+":11434" {
		t.Errorf("entries %q", got)
	}
	same, _ := ownEgress(pol, map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, true)
	if len(same.Entries()) != 0 {
		t.Errorf("with the gateway the model is not an egress: %q", same.Entries())
	}
}

func TestJudgeBoundary(t *testing.T) {
	d := &Docker{opts: Options{Key: "sk-real-key"}}
	ok := boundary.Report{Environ: []string{"OPENAI_API_KEY=token", "PATH=/bin"}}
	ok.Checks = append(ok.Checks, struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}{Name: "gateway without a token", OK: true})
	if b := d.judge(ok); !b.Verified || b.String() != "verified" {
		t.Errorf("all held: %+v", b)
	}
	leaked := ok
	leaked.Environ = append(slices.Clone(ok.Environ), "X=Bearer sk-real-key")
	if b := d.judge(leaked); b.Verified || !strings.Contains(b.String(), "provider key is in the container's environment (X)") || strings.Contains(b.String(), "sk-real") {
		t.Errorf("key in the environment: %q", b.String())
	}
	failed := ok
	failed.Checks = slices.Clone(ok.Checks)
	failed.Checks[0].OK, failed.Checks[0].Detail = false, "HTTP 200"
	if b := d.judge(failed); b.Verified || b.String() != "failed: gateway without a token (HTTP 200)" {
		t.Errorf("a check failed: %q", b.String())
	}
	c := boundary.NewCanary("127.0.0.1:0")
	defer c.Close()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// The canary counts on its own goroutine.
	poll.Wait(t.Context(), 10*time.Second, func() bool { return c.Touched() })
	b := d.judge(ok, c)
	if b.Verified || !strings.Contains(b.String(), "canary") {
		t.Errorf("a canary touched: %q", b.String())
	}
}

// A failed model check under closed egress, with a server this host
// reaches: the fix is the container's socket way to the gateway (or
// egress: open), not a firewall rule or a server listening elsewhere.
func TestClosedEgressPreflightHintNamesTheSocket(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	d, err := closedDocker(t, "bridge", nil)
	if err != nil {
		t.Fatal(err)
	}
	d.opts.Env["OPENAI_BASE_URL"] = srv.URL + "/v1"
	d.gatewayBase = "http://" + relayGateway + d.opts.Gateway.Path()
	err = d.probeFailed(1, "codingagent: GET http://127.0.0.1:47810/v1/models: connection refused\n", "")
	msg := fmt.Sprint(err)
	if !errors.Is(err, ErrModelUnreachable) || !strings.Contains(msg, "unix socket mounted at "+relayDir) || !strings.Contains(msg, "egress: open") {
		t.Errorf("the hint does not name the socket and egress: open: %v", err)
	}
	for _, wrong := range []string{"firewall", "0.0.0.0", "--network host"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the hint suggests %q under closed egress: %v", wrong, err)
		}
	}
}
