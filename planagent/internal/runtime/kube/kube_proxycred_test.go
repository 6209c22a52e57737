//go:build clientgo

package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/codeagent/codeagent/planagent/internal/gateway"
)

// proxyAs is the proxy URL of env with its user and password replaced
// (user "": no credential at all).
func proxyAs(t *testing.T, proxy, user, pass string) string {
	t.Helper()
	u, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	u.User = nil
	if user != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u.String()
}

// An attempt's pod gets a secret of its own in its proxy URL: the proxy
// serves that pod with it, and answers 407 without a credential, with a
// wrong password, with another attempt's name and this one's password —
// those refusals are the run's, nobody's proven; the pod's own refusals
// are its task's. Once the attempt is over its secret is dead.
func TestKubeProxyCredentialIsTheAttempts(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer backend.Close()
	k, cs, refused := kubeClosedEgress(t, backend.URL)
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	launch := func(task string) map[string]string {
		rel := "attempts/" + k.opts.RunID + "/" + task + ".1"
		dir := filepath.Join(k.opts.Volumes.Root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := k.Launch(ctx, Attempt{RunID: k.opts.RunID, TaskID: task, Attempt: 1, Dir: dir, Rel: rel}); err != nil {
			t.Fatal(err)
		}
		return jobAgentEnv(t, waitJob(t, cs, jobName(k.opts.RunID, task, 1)))
	}
	beta, gamma := launch("beta"), launch("gamma")
	bu, err := url.Parse(beta["HTTPS_PROXY"])
	if err != nil || bu.User == nil {
		t.Fatalf("HTTPS_PROXY %q: want a credential", beta["HTTPS_PROXY"])
	}
	secret, _ := bu.User.Password()
	if bu.User.Username() != "beta.1" || !validSecret(secret) {
		t.Fatalf("beta's proxy credential: user %q, a password of %d characters; want beta.1 and a %d-hex secret", bu.User.Username(), len(secret), secretLen)
	}
	gu, _ := url.Parse(gamma["HTTPS_PROXY"])
	if gs, _ := gu.User.Password(); gs == secret {
		t.Fatal("two attempts share a proxy secret")
	}
	if strings.Contains(beta["OPENAI_API_KEY"], secret) || beta["OPENAI_API_KEY"] == secret {
		t.Error("the proxy secret is the gateway token")
	}
	allowed := "http://allowed.test:" + strings.Split(backend.URL, ":")[2] + "/"
	for _, c := range []struct {
		what, proxy string
		want        int
	}{
		{"no credential", proxyAs(t, k.proxyURL, "", ""), http.StatusProxyAuthRequired},
		{"the old constant password", proxyAs(t, k.proxyURL, "beta.1", "attempt"), http.StatusProxyAuthRequired},
		{"gamma's name with beta's secret", proxyAs(t, k.proxyURL, "gamma.1", secret), http.StatusProxyAuthRequired},
		{"beta's own", beta["HTTPS_PROXY"], http.StatusOK},
		{"gamma's own", gamma["HTTPS_PROXY"], http.StatusOK},
	} {
		if code, _ := viaKubeProxy(t, c.proxy, allowed); code != c.want {
			t.Errorf("%s: %d, want %d", c.what, code, c.want)
		}
	}
	if code, _ := viaKubeProxy(t, beta["HTTPS_PROXY"], "http://denied.test/"); code != http.StatusForbidden {
		t.Errorf("a name not allowed with beta's credential: %d, want 403", code)
	}
	got := strings.Join(refused.list(), "|")
	want := "#0 GET allowed.test|#0 GET allowed.test|#0 GET allowed.test|beta#1 GET denied.test"
	if got != want {
		t.Errorf("refusals %q, want %q", got, want)
	}
	if err := k.Abandon(ctx, "beta", 1); err != nil {
		t.Fatal(err)
	}
	if code, _ := viaKubeProxy(t, beta["HTTPS_PROXY"], allowed); code != http.StatusProxyAuthRequired {
		t.Errorf("beta's credential after its attempt: %d, want 407", code)
	}
	if code, _ := viaKubeProxy(t, gamma["HTTPS_PROXY"], allowed); code != http.StatusOK {
		t.Errorf("gamma's credential while it runs: %d, want 200", code)
	}
}

// An acceptance command's Job has a credential of its own under its
// attempt's name, valid while the command runs; one in the shared
// workspace goes as the run's.
func TestKubeExecProxyCredentialLivesWithItsJob(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer backend.Close()
	k, cs, refused := kubeClosedEgress(t, backend.URL)
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i, dir := range []string{filepath.Join(k.opts.Volumes.Attempts(), k.opts.RunID, "alpha.2"), k.opts.Volumes.Workspace()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ectx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _, _ = k.Exec(ectx, dir, "true", time.Minute) }()
		env := jobAgentEnv(t, waitJob(t, cs, execJobName(k.opts.RunID, uint64(i+1))))
		u, _ := url.Parse(env["HTTP_PROXY"])
		if want := []string{"alpha.2", runClient}[i]; u.User.Username() != want {
			t.Errorf("the command's proxy user %q, want %q", u.User.Username(), want)
		}
		if code, _ := viaKubeProxy(t, env["HTTP_PROXY"], "http://denied.test/"); code != http.StatusForbidden {
			t.Errorf("with its credential while it runs: %d, want 403", code)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Exec did not return after its context was cancelled")
		}
		if code, _ := viaKubeProxy(t, env["HTTP_PROXY"], "http://denied.test/"); code != http.StatusProxyAuthRequired {
			t.Errorf("with its credential after it ended: %d, want 407", code)
		}
	}
	want := "alpha#2 GET denied.test|#0 GET denied.test|#0 GET denied.test|#0 GET denied.test"
	if got := strings.Join(refused.list(), "|"); got != want {
		t.Errorf("refusals %q, want %q", got, want)
	}
}

// A planagent killed with -9 leaves its attempt's Job; the resumed process
// takes the credential in that Job's proxy URL again (as the gateway
// token), so the adopted pod keeps its way out under its own name, and
// drops it with the attempt. A Job of an older planagent, whose URL has
// the name alone, is not adopted: the proxy would refuse it.
func TestKubeProxyCredentialTakenAgainOnResume(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer backend.Close()
	k1, cs, _ := kubeClosedEgress(t, backend.URL)
	ctx := t.Context()
	if err := k1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := alphaAttempt(t, k1)
	if err := k1.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, cs, jobName(k1.opts.RunID, "alpha", 1))
	env := jobAgentEnv(t, job)
	// kill -9: no revocation, its servers gone.
	k1.closeEgress()
	if err := k1.opts.Gateway.(*gateway.Gateway).Close(); err != nil {
		t.Fatal(err)
	}
	k2, refused := kubeClosedEgressProcess(t, cs, k1.opts.Volumes, backend.URL)
	if k2.proxyURL != k1.proxyURL {
		t.Fatalf("the resumed proxy is at %s, the Job's pod goes to %s", k2.proxyURL, k1.proxyURL)
	}
	allowed := "http://allowed.test:" + strings.Split(backend.URL, ":")[2] + "/"
	if code, _ := viaKubeProxy(t, env["HTTPS_PROXY"], allowed); code != http.StatusOK {
		t.Fatalf("the killed process's pod at the resumed proxy before any Launch: %d, want 200", code)
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
	if code, _ := viaKubeProxy(t, env["HTTPS_PROXY"], "http://denied.test/"); code != http.StatusForbidden {
		t.Errorf("the adopted pod's credential: %d, want 403 (served, the host refused)", code)
	}
	if got := refused.list(); len(got) != 1 || got[0] != "alpha#1 GET denied.test" {
		t.Errorf("refusals %q, want the adopted attempt's", got)
	}
	if err := k2.Abandon(ctx, "alpha", 1); err != nil {
		t.Fatal(err)
	}
	if code, _ := viaKubeProxy(t, env["HTTPS_PROXY"], allowed); code != http.StatusProxyAuthRequired {
		t.Errorf("the adopted attempt's credential after it: %d, want 407", code)
	}

	// An older planagent's Job: the name alone.
	old := job.DeepCopy()
	for i := range old.Spec.Template.Spec.Containers[0].Env {
		if e := &old.Spec.Template.Spec.Containers[0].Env[i]; strings.EqualFold(e.Name, "HTTPS_PROXY") || strings.EqualFold(e.Name, "HTTP_PROXY") {
			e.Value = proxyAs(t, k2.proxyURL, "alpha.1", "attempt")
		}
	}
	if k2.adoptable(old) {
		t.Error("a Job whose proxy URL has the name alone is adoptable")
	}
	if validSecret("attempt") {
		t.Error("the old constant password passes for a secret")
	}
}

// The stale NetworkPolicy of a killed process is replaced in place (one
// update, never a delete: the run's pods are under a policy all along);
// without the verb the run stops naming it, the old policy in place.
func TestKubePolicyReplacedInPlace(t *testing.T) {
	k1, cs, _ := kubeClosedEgress(t, "http://127.0.0.1:9")
	ctx := t.Context()
	if err := k1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	k1.closeEgress()
	if err := k1.opts.Gateway.(*gateway.Gateway).Close(); err != nil {
		t.Fatal(err)
	}
	stale, err := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, policyName(k1.opts.RunID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale.UID = "uid-of-the-killed-process"
	stale.Spec.Egress[0].Ports = stale.Spec.Egress[0].Ports[:1]
	if _, err := cs.NetworkingV1().NetworkPolicies("agents").Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()

	k2, _ := kubeClosedEgressProcess(t, cs, k1.opts.Volumes, "http://127.0.0.1:9")
	// The boundary probe (NewKube) runs under it and leaves it: the
	// killed process's pods are there.
	if replaced, err := k2.ensurePolicy(ctx); err != nil || !replaced {
		t.Fatalf("ensurePolicy over the killed process's: replaced %v, %v", replaced, err)
	}
	if err := k2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "networkpolicies" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if strings.Join(verbs, ",") != "create,update,create,update" {
		t.Errorf("calls on networkpolicies %v, want create then update, twice, and no delete", verbs)
	}
	p, err := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, policyName(k2.opts.RunID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Spec.Egress[0].Ports); n != 2 || p.Spec.Egress[0].Ports[1].Port.IntValue() != k2.proxyPort() {
		t.Errorf("the replaced policy opens %v, want the gateway's port and the proxy's %d", p.Spec.Egress[0].Ports, k2.proxyPort())
	}
	if err := k2.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// A Role without update: the error names the verb, the old policy stays.
	if _, err := cs.NetworkingV1().NetworkPolicies("agents").Create(ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.PrependReactor("update", "networkpolicies", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, errors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, stale.Name, os.ErrPermission)
	})
	k3, _ := kubeClosedEgressProcess(t, cs, k1.opts.Volumes, "http://127.0.0.1:9")
	_, err = k3.ensurePolicy(ctx)
	if err == nil || !strings.Contains(err.Error(), "add the verb update on networkpolicies") {
		t.Fatalf("without update: %v, want the verb to add named", err)
	}
	if _, gerr := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, stale.Name, metav1.GetOptions{}); gerr != nil {
		t.Errorf("without update the run's policy is gone: %v", gerr)
	}
}
