//go:build clientgo

package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/gateway"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// gatewayKube is a Kube with a real gateway on loopback and the given
// agent settings and secret variables.
func gatewayKube(t *testing.T, api kubeAPI, env map[string]string, secretEnv []string) *Kube {
	t.Helper()
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
	k, err := newKube(api, noExec{}, "agents", Options{
		Volumes: l, RunID: "run-20261128-7", Image: "toolchain:1", TaskTimeout: 20 * time.Minute,
		Env: env, SecretEnv: secretEnv, Gateway: gw, GatewayAddr: "127.0.0.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.serveGateway(t.Context(), "", ""); err != nil {
		t.Fatal(err)
	}
	return k
}

// forbidSecrets makes the fake API server refuse every verb on secrets,
// as a Role without the secrets rule does.
func forbidSecrets(cs *fake.Clientset) {
	cs.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, apiruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("the Role has no rule for secrets"))
	})
}

// secretActions lists the verbs the runtime used on secrets.
func secretActions(cs *fake.Clientset) []string {
	var verbs []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "secrets" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	return verbs
}

// With the gateway and no secret setting (no MCP variable) the run makes
// no Secret, and a Role without any secrets verb runs it: Start, an
// attempt's Job, Stop.
func TestKubeGatewayRunMakesNoSecret(t *testing.T) {
	cs := fake.NewClientset()
	forbidSecrets(cs)
	k := gatewayKube(t, clientsetAPI{cs}, map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m"}, []string{"OPENAI_API_KEY"})
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("a run with nothing secret for its pods under a Role without secrets: %v", err)
	}
	j := k.jobSpec(podSpec{name: jobName(k.opts.RunID, "alpha", 1), role: "attempt", task: "alpha", attempt: 1,
		deadline: 60, command: []string{layout.AgentBinary, "watch"}, workdir: layout.VolumesDir + "/attempts/x", withAgent: true, token: "t"})
	if refs := secretRefs(j.Spec.Template.Spec.Containers[0].Env); len(refs) != 0 {
		t.Errorf("the attempt's pod takes %v from a Secret that does not exist", refs)
	}
	if err := k.Stop(context.WithoutCancel(ctx)); err != nil {
		t.Fatalf("Stop under a Role without secrets: %v", err)
	}
	for _, v := range secretActions(cs) {
		if v == "create" || v == "update" {
			t.Errorf("the runtime tried to %s a Secret (verbs on secrets: %v)", v, secretActions(cs))
		}
	}
}

// A run begun by an older planagent made a Secret holding the key; the
// resumed run needs none and deletes it at Start (the other Secrets of
// the namespace stay).
func TestKubeStartDeletesTheRunsOldSecret(t *testing.T) {
	cs := fake.NewClientset()
	k := gatewayKube(t, clientsetAPI{cs}, map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m"}, nil)
	ctx := t.Context()
	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName(k.opts.RunID), Namespace: "agents",
		Labels:      map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID)},
		Annotations: map[string]string{layout.LabelRun: k.opts.RunID}},
		Data: map[string][]byte{"OPENAI_API_KEY": []byte(kubeTestKey)}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-llm", Namespace: "agents"}}
	for _, s := range []*corev1.Secret{old, other} {
		if _, err := cs.CoreV1().Secrets("agents").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Stop(context.WithoutCancel(ctx)) }()
	list, err := cs.CoreV1().Secrets("agents").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "team-llm" {
		names := []string{}
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		t.Errorf("Secrets after Start: %v, want only team-llm (the run's old one, with the key, deleted)", names)
	}
}

// An MCP server's variable still goes into the run's Secret: a Role
// without secrets is named at Start with the variable and the two fixes.
func TestKubeSecretForbiddenNamesWhatNeedsIt(t *testing.T) {
	cs := fake.NewClientset()
	forbidSecrets(cs)
	k := gatewayKube(t, clientsetAPI{cs}, map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m", "GITHUB_TOKEN": mcpToken},
		[]string{"GITHUB_TOKEN", "OPENAI_API_KEY"})
	err := k.Start(t.Context())
	if err == nil {
		_ = k.Stop(context.WithoutCancel(t.Context()))
		t.Fatal("Start made a run whose MCP variable has no Secret to come from")
	}
	for _, want := range []string{"forbidden", "GITHUB_TOKEN", "secrets rule of docs/kubernetes.md", "kube_secret"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("error %q names the key, which stays behind the gateway", err)
	}
}
