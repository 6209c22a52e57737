//go:build clientgo

package kube

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// boundaryKubeEgress is boundaryKube with the run's egress proxy served
// (an empty allow-list), so the probe's pod gets it with a credential.
func boundaryKubeEgress(t *testing.T) (*Kube, *fake.Clientset, *podLogs, *refusalLog) {
	t.Helper()
	staticCodingAgent(t)
	logs := &podLogs{text: map[string]string{}}
	srv := httptest.NewServer(logs)
	t.Cleanup(srv.Close)
	c, err := newKubeClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Options{Upstream: "http://127.0.0.1:9/v1", Key: kubeTestKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	pol, err := egress.Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	refused := &refusalLog{}
	k, err := newKube(logsAPI{clientsetAPI{cs}, c}, noExec{}, "agents", Options{
		Volumes: l, RunID: "run-20261128-7", Image: "toolchain:1", TaskTimeout: 20 * time.Minute,
		Env:     map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m"},
		Gateway: gw, GatewayAddr: "127.0.0.1", ClosedEgress: true, Egress: pol, EgressRefused: refused.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.serveGateway(t.Context(), "", ""); err != nil {
		t.Fatal(err)
	}
	if k.proxyURL == "" {
		t.Fatal("no egress proxy under closed egress")
	}
	t.Cleanup(k.closeEgress)
	return k, cs, logs, refused
}

// probeChecks is the report the probe's pod printed, by check.
func probeChecks(t *testing.T, logs *podLogs, pod string) map[string]bool {
	t.Helper()
	logs.mu.Lock()
	text := logs.text[pod]
	logs.mu.Unlock()
	var rep boundary.Report
	if err := json.Unmarshal([]byte(output.LastLine(text)), &rep); err != nil {
		t.Fatalf("the probe's report: %v", err)
	}
	got := map[string]bool{}
	for _, c := range rep.Checks {
		got[c.Name] = c.OK
	}
	return got
}

// The probe's pod tries the run's egress proxy without its credential and
// with a wrong password: the proxy answers 407 to both, and those checks
// hold (the verdict is about the network of this host only). None of the
// probe's refusals, those 407s included, is the run's.
func TestKubeBoundaryProbeTriesTheProxyCredential(t *testing.T) {
	k, cs, logs, refused := boundaryKubeEgress(t)
	done, job := startProbe(t, k, cs)
	if args := job.Spec.Template.Spec.Containers[0].Command; !slices.Contains(args, "--proxy-credential") {
		t.Errorf("the probe runs %v, without --proxy-credential", args)
	}
	runProbePod(t, cs, logs, job)
	if err := <-done; err != nil {
		t.Fatalf("the probe with a proxy that takes only its credential: %v", err)
	}
	checks := probeChecks(t, logs, job.Name+"-x1")
	for _, name := range []string{"the egress proxy without a credential", "the egress proxy with a wrong password", "a host not allowed, through the proxy"} {
		if ok, tried := checks[name]; !tried || !ok {
			t.Errorf("check %q tried %v held %v; all: %v", name, tried, ok, checks)
		}
	}
	if b := k.Boundary(); strings.Contains(b.String(), "egress proxy") {
		t.Errorf("boundary %q names the egress proxy", b)
	}
	if got := refused.list(); len(got) != 0 {
		t.Errorf("the probe's refusals reported as the run's: %q", got)
	}
	// Once the probe is over, a request without a credential is the run's
	// refusal again, whatever name it asks for.
	if code, _ := viaKubeProxy(t, k.proxyURL, "http://"+probeDisallowed+"/"); code != http.StatusProxyAuthRequired {
		t.Errorf("without a credential after the probe: %d, want 407", code)
	}
	if got := refused.list(); len(got) != 1 {
		t.Errorf("refusals after the probe: %q, want the one without a credential", got)
	}
}

// A proxy that serves anyone (no credential asked) fails the boundary
// and stops the run: it is planagent's own, not a network plugin's, so
// it is never "egress not enforced by this cluster".
func TestKubeBoundaryProbeProxyWithoutCredentialFails(t *testing.T) {
	k, cs, logs, _ := boundaryKubeEgress(t)
	open := egress.New(egress.Options{Policy: &egress.Policy{}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: open, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	anyone := (&url.URL{Scheme: "http", Host: l.Addr().String(), User: url.UserPassword(probeClient, "whatever")}).String()

	done, job := startProbe(t, k, cs)
	runProbePod(t, cs, logs, job, "HTTP_PROXY="+anyone)
	err = <-done
	if !errors.Is(err, boundary.ErrBreached) {
		t.Fatalf("a proxy that asks no credential: %v, want boundary.ErrBreached", err)
	}
	for _, want := range []string{"the egress proxy without a credential (HTTP 403", "the egress proxy with a wrong password (HTTP 403"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if b := k.Boundary(); strings.HasPrefix(b.Note, notEnforced) || b.Verified {
		t.Errorf("boundary %+v: want failed, not %q", b, notEnforced)
	}
}
