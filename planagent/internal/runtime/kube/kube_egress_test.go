//go:build clientgo

package kube

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
)

// refusalLog keeps what the runtime reported refused, by task and attempt.
type refusalLog struct {
	mu  sync.Mutex
	got []string
}

func (r *refusalLog) add(task string, n int, ref egress.Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, task+"#"+strconv.Itoa(n)+" "+ref.Method+" "+ref.Host)
}

func (r *refusalLog) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// kubeClosedEgress is a Kube under closed egress with a real gateway and
// egress proxy on loopback (standing for the address the pods reach),
// whose allow-list names allowed.test, mapped to backend.
func kubeClosedEgress(t *testing.T, backend string) (*Kube, *fake.Clientset, *refusalLog) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	k, refused := kubeClosedEgressProcess(t, cs, l, backend)
	return k, cs, refused
}

// kubeClosedEgressProcess is one planagent process's runtime of
// kubeClosedEgress over the cluster cs and the volumes l: a second one
// plays the resumed process.
func kubeClosedEgressProcess(t *testing.T, cs *fake.Clientset, l volume.Layout, backend string) (*Kube, *refusalLog) {
	t.Helper()
	gw, err := gateway.New(gateway.Options{Upstream: "http://127.0.0.1:9/v1", Key: kubeTestKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	host, _, _ := strings.Cut(strings.TrimPrefix(backend, "http://"), ":")
	pol, err := egress.Parse([]string{"allowed.test"}, []string{"allowed.test=" + host})
	if err != nil {
		t.Fatal(err)
	}
	refused := &refusalLog{}
	k, err := newKube(clientsetAPI{cs}, noExec{}, "agents", Options{
		Volumes: l, RunID: "run-20261128-7", Image: "toolchain:1", TaskTimeout: 20 * time.Minute,
		Env:     map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m", "OPENAI_BASE_URL": "https://api.openai.com/v1"},
		Gateway: gw, GatewayAddr: "127.0.0.1", ClosedEgress: true, Egress: pol, EgressRefused: refused.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.serveGateway(t.Context(), "", ""); err != nil {
		t.Fatal(err)
	}
	k.poll = 20 * time.Millisecond
	t.Cleanup(func() { _ = k.Stop(context.WithoutCancel(t.Context())) })
	return k, refused
}

// jobAgentEnv is the agent container's environment of a Job, by name; a value
// from a Secret is "<secret>".
func jobAgentEnv(t *testing.T, j *batchv1.Job) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, c := range j.Spec.Template.Spec.Containers {
		if c.Name != "agent" {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				env[e.Name] = "<secret>"
				continue
			}
			env[e.Name] = e.Value
		}
	}
	return env
}

// viaKubeProxy fetches target through proxy and returns the status and body.
func viaKubeProxy(t *testing.T, proxy, target string) (int, string) {
	t.Helper()
	pu, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	resp, err := c.Get(target)
	if err != nil {
		t.Fatalf("GET %s through %s: %v", target, proxy, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Under closed egress an acceptance command's Job gets the egress proxy
// under the name of the attempt whose copy it runs, loopback and nothing
// else kept direct, and no model setting, token or key; the run's
// NetworkPolicy selects its pod and opens the proxy's port beside the
// gateway's. The proxy the Job names admits the allow-list and refuses
// the rest, each refusal reported under that task and attempt.
func TestKubeExecReachesTheAllowListThroughTheProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "module cache")
	}))
	defer backend.Close()
	k, cs, refused := kubeClosedEgress(t, backend.URL)
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(k.opts.Volumes.Attempts(), k.opts.RunID, "alpha.2"+volume.AcceptSuffix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := k.Exec(ectx, dir, "go mod download", time.Minute)
		done <- err
	}()
	j := waitJob(t, cs, execJobName(k.opts.RunID, 1))
	env := jobAgentEnv(t, j)

	proxy, err := url.Parse(env["HTTPS_PROXY"])
	if err != nil || proxy.Host == "" {
		t.Fatalf("HTTPS_PROXY %q: want the egress proxy", env["HTTPS_PROXY"])
	}
	if proxy.User.Username() != "alpha.2" {
		t.Errorf("the proxy user is %q, want alpha.2 (the attempt whose copy the command runs in)", proxy.User.Username())
	}
	for _, name := range []string{"https_proxy", "HTTP_PROXY", "http_proxy"} {
		if env[name] != env["HTTPS_PROXY"] {
			t.Errorf("%s=%q, want %q", name, env[name], env["HTTPS_PROXY"])
		}
	}
	if env["NO_PROXY"] != "localhost,127.0.0.1,::1" || env["no_proxy"] != env["NO_PROXY"] {
		t.Errorf("NO_PROXY %q no_proxy %q: want loopback only (the command has no gateway to call)", env["NO_PROXY"], env["no_proxy"])
	}
	for name, v := range env {
		if strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "ANTHROPIC_") || strings.Contains(v, kubeTestKey) || v == "<secret>" {
			t.Errorf("the acceptance command gets %s=%q", name, v)
		}
	}
	if b, _ := json.Marshal(j); strings.Contains(string(b), kubeTestKey) {
		t.Error("the Job spec holds the key")
	}

	p, err := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, policyName(k.opts.RunID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no network policy: %v", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(j.Spec.Template.Labels)) {
		t.Errorf("the policy's selector %s does not select the acceptance pod (labels %v)", sel, j.Spec.Template.Labels)
	}
	gw, _ := url.Parse(k.gatewayBase)
	var ports []string
	for _, r := range p.Spec.Egress {
		for _, to := range r.To {
			if to.IPBlock == nil || to.IPBlock.CIDR != gw.Hostname()+"/32" {
				t.Errorf("egress to %+v, want only %s/32", to, gw.Hostname())
			}
		}
		for _, port := range r.Ports {
			ports = append(ports, port.Port.String())
		}
	}
	if strings.Join(ports, ",") != gw.Port()+","+proxy.Port() {
		t.Errorf("the policy opens ports %v, want the gateway's %s and the proxy's %s", ports, gw.Port(), proxy.Port())
	}

	// What the pod's tools do with that environment.
	_, port, _ := strings.Cut(strings.TrimPrefix(backend.URL, "http://"), ":")
	if code, body := viaKubeProxy(t, env["HTTP_PROXY"], "http://allowed.test:"+port+"/mod"); code != http.StatusOK || body != "module cache" {
		t.Errorf("allowed.test through the proxy: %d %q", code, body)
	}
	if code, _ := viaKubeProxy(t, env["HTTP_PROXY"], "http://denied.test/"); code != http.StatusForbidden {
		t.Errorf("denied.test through the proxy: %d, want 403", code)
	}
	if code, _ := viaKubeProxy(t, env["HTTP_PROXY"], "http://169.254.169.254/latest/meta-data/"); code != http.StatusForbidden {
		t.Errorf("the metadata address through the proxy: %d, want 403", code)
	}
	got := refused.list()
	want := []string{"alpha#2 GET denied.test", "alpha#2 GET 169.254.169.254"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("refusals reported %q, want %q", got, want)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Exec cancelled before its pod ran returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Exec did not return after its context was cancelled")
	}
}

// An attempt's pod gets the proxy under its own name and calls the
// gateway directly (NO_PROXY names the gateway's host: the proxy would
// refuse this host's address); its token, not the key.
func TestKubeAttemptPodGetsTheProxy(t *testing.T) {
	k, cs, refused := kubeClosedEgress(t, "http://127.0.0.1:9")
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rel := "attempts/" + k.opts.RunID + "/beta.1"
	dir := filepath.Join(k.opts.Volumes.Root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(ctx, Attempt{RunID: k.opts.RunID, TaskID: "beta", Attempt: 1, Dir: dir, Rel: rel}); err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, cs, jobName(k.opts.RunID, "beta", 1))
	env := jobAgentEnv(t, j)
	proxy, err := url.Parse(env["HTTPS_PROXY"])
	if err != nil || proxy.User.Username() != "beta.1" || "http://"+proxy.Host != k.proxyURL {
		t.Fatalf("HTTPS_PROXY %q: want %s as beta.1", env["HTTPS_PROXY"], k.proxyURL)
	}
	if env["NO_PROXY"] != "localhost,127.0.0.1,::1,"+k.gatewayHost() {
		t.Errorf("NO_PROXY %q: want loopback and the gateway's host %s", env["NO_PROXY"], k.gatewayHost())
	}
	if env["OPENAI_BASE_URL"] != k.gatewayBase || env["OPENAI_API_KEY"] == "" || env["OPENAI_API_KEY"] == kubeTestKey {
		t.Errorf("model settings %q %q: want the gateway and a token of the attempt", env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"])
	}
	if code, _ := viaKubeProxy(t, env["HTTPS_PROXY"], "http://"+k.gatewayHost()+":1/"); code != http.StatusForbidden {
		t.Errorf("this host's address through the proxy: %d, want 403", code)
	}
	if got := refused.list(); len(got) != 1 || !strings.HasPrefix(got[0], "beta#1 GET ") {
		t.Errorf("refusals %q, want one of beta attempt 1", got)
	}
	// A resumed process whose proxy is elsewhere cannot adopt the Job:
	// its pod's downloads would go to a proxy nobody serves.
	if !k.adoptable(j) {
		t.Error("this process's own Job is not adoptable")
	}
	moved := j.DeepCopy()
	for i := range moved.Spec.Template.Spec.Containers[0].Env {
		if e := &moved.Spec.Template.Spec.Containers[0].Env[i]; e.Name == "HTTPS_PROXY" {
			e.Value = "http://beta.1:attempt@127.0.0.1:1"
		}
	}
	if k.adoptable(moved) {
		t.Error("a Job told another egress proxy is adoptable")
	}
}

// The boundary probe's pod goes out through the proxy too (so the probe
// tries it), under its own name, whose refusals are not the run's.
func TestKubeBoundaryProbeUsesTheProxy(t *testing.T) {
	k, _, refused := kubeClosedEgress(t, "http://127.0.0.1:9")
	secret, revoke, err := k.issueProxy(probeClient)
	if err != nil {
		t.Fatal(err)
	}
	defer revoke()
	env := map[string]string{}
	for _, e := range k.proxyEnv(probeClient, secret, k.gatewayHost()) {
		env[e.Name] = e.Value
	}
	proxy, err := url.Parse(env["HTTP_PROXY"])
	if pass, _ := proxy.User.Password(); err != nil || proxy.User.Username() != probeClient || pass != secret {
		t.Fatalf("the probe's HTTP_PROXY %q", env["HTTP_PROXY"])
	}
	k.probing.Store(true)
	if code, _ := viaKubeProxy(t, env["HTTP_PROXY"], "http://boundary-probe.invalid/"); code != http.StatusForbidden {
		t.Errorf("through the proxy: %d, want 403", code)
	}
	k.probing.Store(false)
	if got := refused.list(); len(got) != 0 {
		t.Errorf("the probe's refusals reported as the run's: %q", got)
	}
	b := k.judge(boundary.Report{Checks: []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}{{Name: "a host not allowed, through the proxy", OK: false, Detail: "HTTP 200"}}}, nil)
	if reachOnly(b) {
		t.Errorf("the egress proxy letting a host through counted as the cluster's network: %+v", b)
	}
}

// A planagent killed and resumed serves its egress proxy where the killed
// one did (runs/<id>/kube-egress), so the Jobs it adopts keep their way
// out, and makes the run's NetworkPolicy again in place of the one the
// killed process left (whose ports may not be its own).
func TestKubeEgressResumedListensWhereItDid(t *testing.T) {
	k1, cs, _ := kubeClosedEgress(t, "http://127.0.0.1:9")
	ctx := t.Context()
	if err := k1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// kill -9: its servers are gone, its policy stays, with a port of a
	// proxy that no longer matters.
	k1.closeEgress()
	if err := k1.opts.Gateway.(*gateway.Gateway).Close(); err != nil {
		t.Fatal(err)
	}
	stale, err := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, policyName(k1.opts.RunID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale.Spec.Egress[0].Ports = stale.Spec.Egress[0].Ports[:1]
	if _, err := cs.NetworkingV1().NetworkPolicies("agents").Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	k2, _ := kubeClosedEgressProcess(t, cs, k1.opts.Volumes, "http://127.0.0.1:9")
	if k2.proxyURL != k1.proxyURL {
		t.Errorf("the resumed proxy is at %s, the killed one's pods go to %s", k2.proxyURL, k1.proxyURL)
	}
	if err := k2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, policyName(k2.opts.RunID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Spec.Egress[0].Ports); n != 2 || p.Spec.Egress[0].Ports[1].Port.IntValue() != k2.proxyPort() {
		t.Errorf("the resumed run's policy opens %v, want the gateway's port and the proxy's %d", p.Spec.Egress[0].Ports, k2.proxyPort())
	}
}
