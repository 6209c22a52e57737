//go:build clientgo

package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

const (
	mcpToken   = "ghp-mcp-unit-token-7777"
	mcpLiteral = "Bearer literal-header-5555"
)

// kubeWithMCP is a Kube whose agent settings hold an MCP server's
// variable and an mcp_servers value with a literal header.
func kubeWithMCP(t *testing.T, cs *fake.Clientset, secret string) (*Kube, error) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	secretEnv := []string{"GITHUB_TOKEN"}
	if secret == "" {
		secretEnv = append(secretEnv, "CODEAGENT_MCP_SERVERS")
	}
	return newKube(clientsetAPI{cs}, noExec{}, "agents", Options{
		Volumes: l, RunID: "run-20261125-2", Image: "toolchain:1", Secret: secret, SecretEnv: secretEnv,
		Env: map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m", "GITHUB_TOKEN": mcpToken,
			"CODEAGENT_MCP_SERVERS": `{"gh":{"url":"https://mcp.example/","headers":{"Authorization":"` + mcpLiteral + `","X-Token":"${GITHUB_TOKEN}"}}}`},
	})
}

func attemptJSON(t *testing.T, k *Kube) ([]byte, []corev1.EnvVar) {
	t.Helper()
	j := k.jobSpec(podSpec{name: jobName(k.opts.RunID, "alpha", 1), role: "attempt", task: "alpha", attempt: 1,
		deadline: 60, command: []string{layout.AgentBinary, "watch"}, workdir: layout.VolumesDir + "/attempts/x", withAgent: true})
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return b, j.Spec.Template.Spec.Containers[0].Env
}

func secretRefs(env []corev1.EnvVar) map[string]string {
	refs := map[string]string{}
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return refs
}

// The MCP servers' secret values reach the pod only through the run's
// Secret: the Job spec holds references, the Secret the values.
func TestKubeMCPSecretsOnlyThroughTheSecret(t *testing.T) {
	cs := fake.NewClientset()
	k, err := kubeWithMCP(t, cs, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Stop(t.Context()) }()
	b, env := attemptJSON(t, k)
	for _, v := range []string{kubeTestKey, mcpToken, mcpLiteral} {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("the Job spec holds the secret value %q", v)
		}
	}
	refs := secretRefs(env)
	for _, name := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN", "CODEAGENT_MCP_SERVERS"} {
		if refs[name] != k.secret+"/"+name {
			t.Errorf("%s comes from %q, want the run's Secret %s key %s (refs %v)", name, refs[name], k.secret, name, refs)
		}
	}
	sec, err := cs.CoreV1().Secrets("agents").Get(t.Context(), k.secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["GITHUB_TOKEN"]) != mcpToken || !strings.Contains(string(sec.Data["CODEAGENT_MCP_SERVERS"]), mcpLiteral) {
		t.Errorf("the run's Secret holds %v", sec.Data)
	}
	if k.mask("token "+mcpToken+" key "+kubeTestKey) != "token [redacted] key [redacted]" {
		t.Errorf("the pods' output is not masked: %q", k.mask("token "+mcpToken+" key "+kubeTestKey))
	}
}

// kube_secret names an existing Secret: it must hold every secret setting
// planagent has (named at start, exit 2); the pods reference it; planagent
// neither creates nor deletes a Secret.
func TestKubeUserNamedSecret(t *testing.T) {
	cs := fake.NewClientset()
	k, err := kubeWithMCP(t, cs, "team-llm")
	if err != nil {
		t.Fatal(err)
	}
	err = k.checkSecret(t.Context())
	if !errors.Is(err, ErrClusterUnreachable) || !strings.Contains(err.Error(), "team-llm") || !strings.Contains(err.Error(), "kubectl create secret generic team-llm") {
		t.Errorf("a missing Secret: err = %v", err)
	}
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-llm", Namespace: "agents"},
		Data: map[string][]byte{"OPENAI_API_KEY": []byte("k")}}
	if _, err := cs.CoreV1().Secrets("agents").Create(t.Context(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = k.checkSecret(t.Context())
	if !errors.Is(err, ErrClusterUnreachable) || !strings.Contains(err.Error(), "has no key GITHUB_TOKEN") {
		t.Errorf("a Secret without the MCP variable: err = %v", err)
	}
	user.Data["GITHUB_TOKEN"] = []byte("t")
	if _, err := cs.CoreV1().Secrets("agents").Update(t.Context(), user, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.checkSecret(t.Context()); err != nil {
		t.Fatalf("a Secret with every key: %v", err)
	}
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, env := attemptJSON(t, k)
	if bytes.Contains(b, []byte(kubeTestKey)) || bytes.Contains(b, []byte(mcpToken)) {
		t.Error("the Job spec holds a secret value")
	}
	refs := secretRefs(env)
	if refs["OPENAI_API_KEY"] != "team-llm/OPENAI_API_KEY" || refs["GITHUB_TOKEN"] != "team-llm/GITHUB_TOKEN" {
		t.Errorf("secret refs %v, want the user's Secret", refs)
	}
	if err := k.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	list, _ := cs.CoreV1().Secrets("agents").List(t.Context(), metav1.ListOptions{})
	if len(list.Items) != 1 || list.Items[0].Name != "team-llm" || string(list.Items[0].Data["GITHUB_TOKEN"]) != "t" {
		t.Errorf("secrets after the run: %v, want the user's untouched and no other", list.Items)
	}
}

// Node selector, tolerations and requests from the config reach every pod
// of the run: the attempts', the acceptance commands' and the image check's.
func TestKubePlacementAndRequests(t *testing.T) {
	k, cs := newTestKube(t)
	k.opts.NodeSelector = map[string]string{"disktype": "ssd"}
	k.opts.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	k.opts.CPURequest, k.opts.MemoryRequest = 0.5, "256m"
	attempt := k.jobSpec(podSpec{name: "a", role: "attempt", task: "alpha", attempt: 1, deadline: 60, workdir: layout.WorkspaceDir, withAgent: true})
	exec := k.jobSpec(podSpec{name: "x", role: "exec", deadline: 60, command: []string{"/bin/sh", "-c", "true"}, workdir: layout.WorkspaceDir})
	probeDone := make(chan error, 1)
	k.opts.PendingTimeout = time.Minute
	go func() { _, err := k.probe(t.Context()); probeDone <- err }()
	probe := waitJob(t, cs, probeName(k.opts.RunID))
	for name, p := range map[string]corev1.PodSpec{"attempt": attempt.Spec.Template.Spec, "exec": exec.Spec.Template.Spec, "probe": probe.Spec.Template.Spec} {
		if p.NodeSelector["disktype"] != "ssd" || len(p.Tolerations) != 1 || p.Tolerations[0].Key != "gpu" || p.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("%s pod: node selector %v, tolerations %v", name, p.NodeSelector, p.Tolerations)
		}
		r := p.Containers[0].Resources
		if r.Requests.Cpu().MilliValue() != 500 || r.Requests.Memory().Value() != 256<<20 {
			t.Errorf("%s pod: requests %v", name, r.Requests)
		}
		if r.Limits.Cpu().MilliValue() != 1500 || r.Limits.Memory().Value() != 1<<30 {
			t.Errorf("%s pod: limits %v", name, r.Limits)
		}
	}
	// End the probe: its pod succeeds.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe-x", Namespace: "agents", Labels: map[string]string{"job-name": probe.Name}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	if _, err := cs.CoreV1().Pods("agents").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-probeDone; err != nil {
		t.Errorf("a probe whose pod succeeded: %v", err)
	}
}

// A run killed and never resumed left its Secret, which holds the key: the
// next run of the same volumes dir deletes it, and only it — not a live
// run's, not another volumes dir's, not its own.
func TestKubeStartDropsTheSecretsOfKilledRuns(t *testing.T) {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	const (
		dead  = "run-20261101-dead"
		alive = "run-20261101-alive"
		other = "run-20261101-elsewhere" // no state in this volumes dir
		own   = "run-20261125-2"
	)
	for _, run := range []string{dead, alive} {
		if err := os.MkdirAll(l.Run(run), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := runlock.Acquire(l.Run(alive))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	cs := fake.NewClientset()
	for _, run := range []string{dead, alive, other, own} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName(run), Namespace: "agents",
			Labels: map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(run)}, Annotations: map[string]string{layout.LabelRun: run}}}
		if _, err := cs.CoreV1().Secrets("agents").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := newKube(clientsetAPI{cs}, noExec{}, "agents", Options{
		Volumes: l, RunID: own, Image: "toolchain:1", Env: map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for run, want := range map[string]bool{dead: false, alive: true, other: true, own: true} {
		_, err := cs.CoreV1().Secrets("agents").Get(t.Context(), secretName(run), metav1.GetOptions{})
		if got := err == nil; got != want {
			t.Errorf("the Secret of %s still there: %v, want %v (%v)", run, got, want, err)
		}
	}
	if err := k.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}
