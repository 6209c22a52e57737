//go:build clientgo

package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

func waitJob(t *testing.T, cs *fake.Clientset, name string) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	poll.Until(t, 30*time.Second, "job "+name, func() bool {
		got, err := cs.BatchV1().Jobs("agents").Get(t.Context(), name, metav1.GetOptions{})
		j = got
		return err == nil
	})
	return j
}

// The image check at start names an image the nodes cannot run in one
// line (exit 2 through ErrClusterUnreachable), and removes its Job.
func TestKubeProbeNamesAnImageThatCannotRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		status corev1.PodStatus
		want   []string
	}{
		{"not on the node", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "image",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `Container image "toolchain:1" is not present with pull policy of Never`}}}}},
			[]string{"ErrImageNeverPull", "toolchain:1", "import it into the nodes"}},
		{"no shell", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "image",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error"}}}}},
			[]string{"image toolchain:1 cannot run the attempts", "code 127", "needs /bin/sh"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, cs := newTestKube(t)
			done := make(chan error, 1)
			go func() { _, err := k.probe(t.Context()); done <- err }()
			job := waitJob(t, cs, probeName(k.opts.RunID))
			if job.Labels[layout.LabelRole] != "probe" || job.Spec.Template.Spec.Containers[0].Image != "toolchain:1" {
				t.Errorf("probe job %v image %s", job.Labels, job.Spec.Template.Spec.Containers[0].Image)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe-x", Namespace: "agents", Labels: map[string]string{"job-name": job.Name}}, Status: c.status}
			if _, err := cs.CoreV1().Pods("agents").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the probe did not end")
			}
			if !errors.Is(err, ErrClusterUnreachable) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line wrapping ErrClusterUnreachable", err)
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not say %q", err, w)
				}
			}
			if _, err := cs.BatchV1().Jobs("agents").Get(t.Context(), job.Name, metav1.GetOptions{}); err == nil {
				t.Error("the probe's Job stayed")
			}
		})
	}
}

// A pod the scheduler cannot place fails its attempt once kube_pending_timeout
// passes, naming the scheduler's reason.
func TestKubeUnschedulablePodFailsAfterThePendingTimeout(t *testing.T) {
	t.Parallel()
	k, cs := newTestKube(t)
	k.opts.PendingTimeout = 300 * time.Millisecond
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "agents", Labels: map[string]string{"job-name": "j"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector"}}}}
	if _, err := cs.CoreV1().Pods("agents").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := k.waitPodObj(t.Context(), jobRef{name: "j"}, func(p *corev1.Pod) bool { return containerRunning(p, "io") })
	if err == nil || !strings.Contains(err.Error(), "unschedulable: 0/1 nodes are available") || !strings.Contains(err.Error(), "kube_pending_timeout") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) < k.opts.PendingTimeout {
		t.Errorf("failed after %s, before the pending timeout", time.Since(start))
	}
}

// Evicted, node lost, deleted under the attempt: each named.
func TestPodLostNamesWhy(t *testing.T) {
	now := metav1.Now()
	for _, c := range []struct {
		pod  corev1.Pod
		want string
	}{
		{corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}},
			"evicted from n1: The node was low on resource: memory."},
		{corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint"}}}},
			"node n1 lost (DeletionByTaintManager)"},
		{corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler", Message: "preempted"}}}},
			"evicted from n1 (PreemptionByScheduler)"},
		{corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2"}, Status: corev1.PodStatus{Phase: corev1.PodUnknown}}, "node n2 lost"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: corev1.PodSpec{NodeName: "n3"}}, "deleted while its attempt ran"},
	} {
		if got := podProblem(&c.pod); !strings.Contains(got, c.want) {
			t.Errorf("podProblem = %q, want %q", got, c.want)
		}
	}
	if got := podProblem(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}); got != "" {
		t.Errorf("a running pod: %q", got)
	}
}
