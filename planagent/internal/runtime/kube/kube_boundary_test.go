//go:build clientgo

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// podLogs is an API server of pods' logs only: what each pod printed, by
// name. The fake clientset's GetLogs answers "fake logs" whatever the pod
// printed, so the logs come from here, through the runtime's own client.
type podLogs struct {
	mu   sync.Mutex
	text map[string]string
}

func (l *podLogs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // api v1 namespaces NS pods NAME log
	if len(parts) != 7 || parts[6] != "log" {
		http.NotFound(w, r)
		return
	}
	l.mu.Lock()
	text, ok := l.text[parts[5]]
	l.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, text)
}

func (l *podLogs) set(pod, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text[pod] = text
}

// logsAPI is the fake clientset with the pods' logs of a podLogs server.
type logsAPI struct {
	clientsetAPI
	logs *kubeClient
}

func (a logsAPI) Pods(ns string) kubePods {
	return logPods{kubePods: a.clientsetAPI.Pods(ns), logs: a.logs.Pods(ns)}
}

type logPods struct {
	kubePods
	logs kubePods
}

func (p logPods) GetLogs(name string, o *corev1.PodLogOptions) *rest.Request {
	return p.logs.GetLogs(name, o)
}

// boundaryKube is a Kube under closed egress with a real gateway on
// loopback, over the fake clientset and a podLogs server.
func boundaryKube(t *testing.T) (*Kube, *fake.Clientset, *podLogs) {
	t.Helper()
	// Built before the probe starts: runProbePod plays the kubelet with it
	// and the probe waits for its pod no longer than the pending timeout.
	staticCodingAgent(t)
	logs := &podLogs{text: map[string]string{}}
	srv := httptest.NewServer(logs)
	t.Cleanup(srv.Close)
	c, err := newKubeClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	k := gatewayKube(t, logsAPI{clientsetAPI{cs}, c}, map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m"}, nil)
	k.opts.ClosedEgress = true
	return k, cs, logs
}

// runProbePod plays the kubelet for the boundary probe's Job: it runs the
// Job's container command with the real codingagent (built for the test)
// and the container's environment plus extra, on this host's network,
// then records the pod's end and its output.
func runProbePod(t *testing.T, cs *fake.Clientset, logs *podLogs, job *batchv1.Job, extra ...string) {
	t.Helper()
	c := job.Spec.Template.Spec.Containers[0]
	if c.Name != "boundary" || len(c.Command) < 2 || c.Command[0] != AgentImageBinary || c.Command[1] != "boundary" {
		t.Fatalf("the probe's container %s runs %v, want %s boundary", c.Name, c.Command, AgentImageBinary)
	}
	args := slices.Clone(c.Command)
	args[0] = staticCodingAgent(t)
	cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Fatalf("the probe takes %s from %v: the kubelet of this test resolves no references", e.Name, e.ValueFrom)
		}
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.Output()
	phase := corev1.PodSucceeded
	if err != nil {
		phase = corev1.PodFailed
	}
	endPod(t, cs, logs, job, phase, string(out))
}

// endPod puts the Job's pod in the fake API in phase with its output.
func endPod(t *testing.T, cs *fake.Clientset, logs *podLogs, job *batchv1.Job, phase corev1.PodPhase, out string) {
	t.Helper()
	name := job.Name + "-x1"
	logs.set(name, out)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agents", Labels: map[string]string{"job-name": job.Name}},
		Status: corev1.PodStatus{Phase: phase}}
	if _, err := cs.CoreV1().Pods("agents").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startProbe runs probeBoundary (the start of run, run --check, resume)
// and returns its result's channel and the probe's Job once created.
func startProbe(t *testing.T, k *Kube, cs *fake.Clientset) (<-chan error, *batchv1.Job) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- k.probeBoundary(t.Context()) }()
	return done, waitJob(t, cs, boundaryJobName(k.opts.RunID))
}

// The probe's pod on a network that does not enforce the run's policy
// (this host's: it reaches the canary beside the gateway): its report is
// parsed, the verdict is "egress not enforced by this cluster" naming
// what it reached, and the run goes on. The probe ran under the run's
// NetworkPolicy (its pod carries the run's label), with a token and not
// the key; the Job and the policy are gone after.
func TestKubeBoundaryProbePodNotEnforced(t *testing.T) {
	k, cs, logs := boundaryKube(t)
	done, job := startProbe(t, k, cs)
	if got := job.Spec.Template.Labels[layout.LabelRun]; got != labelValue(k.opts.RunID) {
		t.Errorf("the probe's pod has run label %q: the run's policy (selecting %q) does not apply to it", got, labelValue(k.opts.RunID))
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("agents").Get(t.Context(), policyName(k.opts.RunID), metav1.GetOptions{}); err != nil {
		t.Errorf("no network policy while the probe runs: %v", err)
	}
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), kubeTestKey) {
		t.Error("the probe's Job spec holds the key")
	}
	runProbePod(t, cs, logs, job)
	if err := <-done; err != nil {
		t.Fatalf("a cluster that lets the probe through: %v, want a warning and the run going on", err)
	}
	got := k.Boundary()
	if got.Verified || !strings.HasPrefix(got.Note, notEnforced+": ") || !strings.Contains(got.Note, "beside planagent") ||
		!strings.Contains(got.Note, "Calico") || !strings.Contains(got.Note, "egress: open") {
		t.Errorf("boundary %+v: want %q naming the canary it reached and the fixes", got, notEnforced)
	}
	// The gateway's checks held: they are no part of the verdict.
	if strings.Contains(got.Note, "gateway ") {
		t.Errorf("the gateway's checks failed in the probe's pod: %s", got.Note)
	}
	if _, err := cs.BatchV1().Jobs("agents").Get(t.Context(), job.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the probe's Job after the probe: %v, want it deleted", err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("agents").Get(t.Context(), policyName(k.opts.RunID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the policy made for the probe after it: %v, want it deleted (Start makes the run's own)", err)
	}
}

// What planagent guards failing in the probe's pod stops the run: the
// key in the pod's environment is named by its variable, never shown.
func TestKubeBoundaryProbePodFindsTheKey(t *testing.T) {
	k, cs, logs := boundaryKube(t)
	done, job := startProbe(t, k, cs)
	runProbePod(t, cs, logs, job, "LEAKED_KEY="+kubeTestKey)
	err := <-done
	if !errors.Is(err, boundary.ErrBreached) || !strings.Contains(err.Error(), "the provider key is in the pod's environment (LEAKED_KEY)") {
		t.Fatalf("the key in the probe's pod: %v, want boundary.ErrBreached naming LEAKED_KEY", err)
	}
	if strings.Contains(err.Error(), kubeTestKey) {
		t.Error("the error shows the key")
	}
	if b := k.Boundary(); b.Verified || len(b.Failed) == 0 {
		t.Errorf("boundary %+v, want failed", b)
	}
}

// A probe pod that ends without its report, or never runs, is named (exit
// 2 through ErrClusterUnreachable); what the pod printed is not repeated:
// it may hold the pod's environment.
func TestKubeBoundaryProbePodFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(t *testing.T, cs *fake.Clientset, logs *podLogs, job *batchv1.Job)
		want []string
	}{
		{"failed without a report", func(t *testing.T, cs *fake.Clientset, logs *podLogs, job *batchv1.Job) {
			endPod(t, cs, logs, job, corev1.PodFailed, "exec /app/codingagent: exec format error\nOPENAI_API_KEY=tok-1234567890\n")
		}, []string{"boundary probe's pod ended Failed without its report"}},
		{"succeeded with no report", func(t *testing.T, cs *fake.Clientset, logs *podLogs, job *batchv1.Job) {
			endPod(t, cs, logs, job, corev1.PodSucceeded, "OPENAI_API_KEY=tok-1234567890\n")
		}, []string{"ended Succeeded without its report"}},
		{"image not on the node", func(t *testing.T, cs *fake.Clientset, _ *podLogs, job *batchv1.Job) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x1", Namespace: "agents", Labels: map[string]string{"job-name": job.Name}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "boundary",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `image "codeagent/codingagent:latest" is not present`}}}}}}
			if _, err := cs.CoreV1().Pods("agents").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, []string{"the boundary probe's pod", "ErrImageNeverPull"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, cs, logs := boundaryKube(t)
			done, job := startProbe(t, k, cs)
			c.end(t, cs, logs, job)
			err := <-done
			if !errors.Is(err, ErrClusterUnreachable) {
				t.Fatalf("err = %v, want ErrClusterUnreachable (exit 2)", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "tok-1234567890") {
				t.Errorf("the error repeats the pod's output: %v", err)
			}
			if _, err := cs.NetworkingV1().NetworkPolicies("agents").Get(context.WithoutCancel(t.Context()), policyName(k.opts.RunID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the probe's policy after a failed probe: %v, want it deleted", err)
			}
		})
	}
}
