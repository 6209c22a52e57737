package kube

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/codeagent/codeagent/internal/volume"
)

// kubeconfigFor writes a kubeconfig whose current context points at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team}
current-context: ctx
`, server)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func setupOpts(t *testing.T, kubeconfig string) Options {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	return Options{Volumes: l, RunID: "r1", Kubeconfig: kubeconfig}
}

// A wrong setup is named at start, in one line that says what to fix.
func TestNewKubeNamesTheSetupProblem(t *testing.T) {
	status := func(code int, reason string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":"jobs.batch is %s"}`, reason, code, strings.ToLower(reason))
		}
	}
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"forbidden", status(403, "Forbidden"), []string{"list jobs in namespace team", "forbidden", "Role", "pods/exec"}},
		{"namespace missing", func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/team") && !strings.Contains(r.URL.Path, "jobs") {
				status(404, "NotFound")(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"JobList","apiVersion":"batch/v1","items":[]}`)
		}, []string{"namespace team not found", "--namespace"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			_, err := New(t.Context(), setupOpts(t, kubeconfigFor(t, srv.URL)))
			if !errors.Is(err, ErrClusterUnreachable) {
				t.Fatalf("err = %v, want ErrClusterUnreachable", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := New(t.Context(), setupOpts(t, kubeconfigFor(t, url)))
		if !errors.Is(err, ErrClusterUnreachable) || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "--kubeconfig/--context") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no such context", func(t *testing.T) {
		o := setupOpts(t, kubeconfigFor(t, "http://127.0.0.1:1"))
		o.Context = "nope"
		_, err := New(t.Context(), o)
		if !errors.Is(err, ErrClusterUnreachable) || !strings.Contains(err.Error(), `--context "nope"`) {
			t.Errorf("err = %v", err)
		}
	})
}

// A pod that cannot go on is named in one line: the attempt fails fast
// instead of waiting for its timeout.
func TestPodProblemNamesWhy(t *testing.T) {
	waitingWith := func(reason, msg string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}}
	}
	waiting := func(reason string) *corev1.Pod { return waitingWith(reason, "m") }
	for _, c := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{waiting("ErrImageNeverPull"), "container agent cannot start: ErrImageNeverPull"},
		{waiting("ImagePullBackOff"), "import the image into the node"},
		{&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}}, "evicted from its node: low on memory"},
		{&corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "codingagent"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "codingagent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "cp: not found"}}}}}},
			"init container codingagent failed with code 1"},
		{waiting("ContainerCreating"), ""},
		// The kubelet retries a secret whose cache is not yet in sync (seen
		// on the single-node cluster right after the run made the secret);
		// a secret that is not there is for good.
		{waitingWith("CreateContainerConfigError", "failed to sync secret cache: timed out waiting for the condition"), ""},
		{waitingWith("CreateContainerConfigError", `secret "ca-run-x" not found`), `cannot start: CreateContainerConfigError: secret "ca-run-x" not found`},
	} {
		if got := podProblem(c.pod); (c.want == "" && got != "") || !strings.Contains(got, c.want) {
			t.Errorf("podProblem = %q, want %q", got, c.want)
		}
	}
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/1 nodes are available: Insufficient memory"}}}}
	if got := pendingReason(p); !strings.Contains(got, "unschedulable: 0/1 nodes") {
		t.Errorf("pendingReason = %q", got)
	}
}
