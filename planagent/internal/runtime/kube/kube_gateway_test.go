//go:build clientgo

package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
)

// kubeWithGateway is a Kube whose pods are served the model by a real
// gateway on loopback (the address stands for one the pods reach).
func kubeWithGateway(t *testing.T, addr string) (*Kube, *fake.Clientset, error) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	k, err := kubeProcess(t, cs, l, addr)
	return k, cs, err
}

// kubeProcess is one planagent process's runtime with its own gateway over
// the cluster cs and the volumes l: a second one plays the resumed process.
func kubeProcess(t *testing.T, cs *fake.Clientset, l volume.Layout, addr string) (*Kube, error) {
	t.Helper()
	gw, err := gateway.New(gateway.Options{Upstream: "http://127.0.0.1:9/v1", Key: kubeTestKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	env := map[string]string{"OPENAI_API_KEY": kubeTestKey, "ANTHROPIC_API_KEY": kubeTestKey, "OPENAI_MODEL": "m",
		"OPENAI_BASE_URL": "https://api.openai.com/v1", "GITHUB_TOKEN": mcpToken}
	k, err := newKube(clientsetAPI{cs}, noExec{}, "agents", Options{
		Volumes: l, RunID: "run-20261128-1", Image: "toolchain:1", TaskTimeout: 20 * time.Minute,
		Env: env, SecretEnv: []string{"GITHUB_TOKEN", "OPENAI_API_KEY"}, Gateway: gw, GatewayAddr: addr,
	})
	if err == nil {
		err = k.serveGateway(t.Context(), "", "")
	}
	if err == nil {
		k.poll = 20 * time.Millisecond
		if env["OPENAI_API_KEY"] != kubeTestKey {
			t.Error("the runtime changed its caller's settings")
		}
	}
	return k, err
}

// With the gateway the key is in no Job spec and no Secret: the attempt's
// pod gets its own token, which the gateway takes while the attempt runs
// and refuses after, and the gateway's URL.
func TestKubeGatewayKeepsTheKeyOutOfThePods(t *testing.T) {
	k, cs, err := kubeWithGateway(t, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = k.Stop(context.WithoutCancel(ctx))
		}
	}()
	rel := "attempts/r/alpha.1"
	dir := filepath.Join(k.opts.Volumes.Root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(ctx, Attempt{RunID: k.opts.RunID, TaskID: "alpha", Attempt: 1, Dir: dir, Rel: rel}); err != nil {
		t.Fatal(err)
	}
	job, err := cs.BatchV1().Jobs("agents").Get(ctx, jobName(k.opts.RunID, "alpha", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets("agents").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []any{job, secrets} {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), kubeTestKey) {
			t.Errorf("the key is in %T: %s", obj, b)
		}
	}
	if len(secrets.Items) != 1 || string(secrets.Items[0].Data["GITHUB_TOKEN"]) != mcpToken || len(secrets.Items[0].Data) != 1 {
		t.Errorf("the run's Secret: %+v, want only the MCP variable", secrets.Items)
	}
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			env[e.Name] = "from " + e.ValueFrom.SecretKeyRef.Name
			continue
		}
		env[e.Name] = e.Value
	}
	token, base := env["OPENAI_API_KEY"], env["OPENAI_BASE_URL"]
	if len(token) != 64 || !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("the pod's model settings: key %q, base URL %q; want a token and the gateway", token, base)
	}
	if _, ok := env["ANTHROPIC_API_KEY"]; ok {
		t.Error("the pod has ANTHROPIC_API_KEY")
	}
	status := func() int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The upstream is closed: a token the gateway takes gets 502, not 401.
	if s := status(); s != http.StatusBadGateway {
		t.Errorf("while the attempt runs the gateway answered %d, want 502 (token taken, provider down)", s)
	}
	if err := k.Stop(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if s := status(); s != http.StatusUnauthorized {
		t.Errorf("after the attempt the gateway answered %d, want 401", s)
	}
}

// Outside the cluster without kube_gateway the runtime does not start,
// and says what to set.
func TestKubeGatewayNeedsAnAddress(t *testing.T) {
	_, _, err := kubeWithGateway(t, "")
	if err == nil || !strings.Contains(err.Error(), "kube_gateway") {
		t.Errorf("err %v, want one naming kube_gateway", err)
	}
	_, _, err = kubeWithGateway(t, "192.0.2.1") // TEST-NET: not this host's
	if err == nil || !strings.Contains(err.Error(), "kube_gateway") {
		t.Errorf("err %v, want one naming kube_gateway", err)
	}
}

// gatewayStatus is what the gateway at base answers token (502: taken, the
// upstream being closed; 401: refused).
func gatewayStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A planagent killed with -9 leaves its attempt's Job; the resumed process
// serves its gateway at the same address and takes the Job's token again
// before it listens (the pod keeps working through it), hands the grant to
// the attempt that adopts the Job, and revokes it when none does.
func TestKubeGatewayResumedServesTheAdoptedJobs(t *testing.T) {
	k1, cs, err := kubeWithGateway(t, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := k1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := alphaAttempt(t, k1)
	if err := k1.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	job, err := cs.BatchV1().Jobs("agents").Get(ctx, jobName(k1.opts.RunID, "alpha", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, base := jobEnv(job, "OPENAI_API_KEY"), jobEnv(job, "OPENAI_BASE_URL")
	if jobEnv(job, "CODEAGENT_MODEL_DOWN_GRACE") != gatewayDownGrace {
		t.Errorf("the agent does not wait for a restarting gateway: %s unset", "CODEAGENT_MODEL_DOWN_GRACE")
	}
	// kill -9: the process's gateway is gone, nothing deleted the Job.
	k1.mu.Lock()
	for _, at := range k1.attempts {
		at.cancel()
	}
	k1.mu.Unlock()
	if err := k1.opts.Gateway.(*gateway.Gateway).Close(); err != nil {
		t.Fatal(err)
	}

	k2, err := kubeProcess(t, cs, k1.opts.Volumes, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if k2.gatewayBase != base {
		t.Fatalf("the resumed gateway is at %s, the adopted pod goes to %s", k2.gatewayBase, base)
	}
	if s := gatewayStatus(t, base, token); s != http.StatusBadGateway {
		t.Fatalf("before any Launch the resumed gateway answered the Job's token %d, want 502 (taken, provider down)", s)
	}
	if s := gatewayStatus(t, base, strings.Repeat("ab", 32)); s != http.StatusUnauthorized {
		t.Errorf("the resumed gateway answered an unknown token %d, want 401", s)
	}
	if err := k2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	k2.exec = noExec{}
	if err := k2.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	k2.mu.Lock()
	adopted := k2.attempts[a.Name()] != nil && k2.attempts[a.Name()].adopted
	k2.mu.Unlock()
	if !adopted {
		t.Fatal("the resumed process did not adopt the Job")
	}
	if err := k2.DropUnadopted(ctx); err != nil {
		t.Fatal(err)
	}
	if s := gatewayStatus(t, base, token); s != http.StatusBadGateway {
		t.Errorf("the adopted attempt's token: %d after DropUnadopted, want 502 (still its attempt's)", s)
	}
	if err := k2.Stop(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	if s := gatewayStatus(t, base, token); s != http.StatusUnauthorized {
		t.Errorf("after the run the token got %d, want 401", s)
	}
}

// A Job whose pod was told another gateway (the earlier one's port was
// taken) is not adopted: its attempt runs again with this gateway's URL.
func TestKubeGatewayElsewhereIsNotAdopted(t *testing.T) {
	k1, cs, err := kubeWithGateway(t, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := k1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := alphaAttempt(t, k1)
	if err := k1.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	k1.mu.Lock()
	for _, at := range k1.attempts {
		at.cancel()
	}
	k1.mu.Unlock()
	// The killed process's port stays taken (its gateway still listens).
	k2, err := kubeProcess(t, cs, k1.opts.Volumes, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if k2.gatewayBase == k1.gatewayBase {
		t.Fatalf("two gateways at %s", k2.gatewayBase)
	}
	if err := k2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	k2.exec = noExec{}
	if err := k2.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k2.Stop(context.WithoutCancel(ctx)) }()
	job, err := cs.BatchV1().Jobs("agents").Get(ctx, jobName(k1.opts.RunID, "alpha", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobEnv(job, "OPENAI_BASE_URL"); got != k2.gatewayBase {
		t.Errorf("the attempt's Job goes to %s, want the running gateway %s (made again, not adopted)", got, k2.gatewayBase)
	}
}
