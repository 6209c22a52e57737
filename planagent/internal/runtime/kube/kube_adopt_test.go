//go:build clientgo

package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// alphaReport is the report alpha's agent leaves in its pod.
func alphaReport(t *testing.T, runID string) []byte {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "alpha.md")
	if err := protocol.WriteReport(tmp, &protocol.Report{ID: "alpha", RunID: runID, Attempt: 1, Status: protocol.StatusCompleted, Summary: "done"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newPodFiles(t *testing.T, runID string) *podFiles {
	return &podFiles{in: map[string]string{}, pushed: make(chan struct{}), reportID: "alpha", report: alphaReport(t, runID),
		results: map[string]string{"attempts/r/alpha.1/new.txt": "made in the pod\n"}}
}

// alphaAttempt makes alpha's attempt 1 copy and command file on the host.
func alphaAttempt(t *testing.T, k *Kube) Attempt {
	t.Helper()
	rel := "attempts/r/alpha.1"
	dir := filepath.Join(k.opts.Volumes.Root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Dir(k.opts.Volumes.CommandFile("alpha")), 0o755)
	if err := os.WriteFile(k.opts.Volumes.CommandFile("alpha"), []byte("command"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Attempt{RunID: k.opts.RunID, TaskID: "alpha", Attempt: 1, Dir: dir, Rel: rel}
}

// setPod creates or updates the Job's pod with the agent's and io's states.
func setPod(t *testing.T, cs *fake.Clientset, job string, agent, io corev1.ContainerState) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job + "-x", Namespace: "agents", Labels: map[string]string{"job-name": job}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "agent", State: agent}, {Name: "io", State: io}}}}
	if _, err := cs.CoreV1().Pods("agents").Create(t.Context(), pod, metav1.CreateOptions{}); err == nil {
		return
	}
	if _, err := cs.CoreV1().Pods("agents").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

var (
	running = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	exited0 = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
)

// killedAfterLaunch plays a planagent killed with -9 once its attempt's Job
// exists: its goroutine stops and nothing deletes the Job.
func killedAfterLaunch(t *testing.T) (*Kube, *fake.Clientset, Attempt) {
	t.Helper()
	k1, cs := newTestKube(t)
	k1.exec = noExec{}
	if err := k1.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := alphaAttempt(t, k1)
	if err := k1.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	k1.mu.Lock()
	at := k1.attempts[a.Name()]
	k1.mu.Unlock()
	at.cancel()
	<-at.done
	return k1, cs, a
}

// jobCreates counts the creations of the Job name.
func jobCreates(cs *fake.Clientset, name string) int {
	n := 0
	for _, a := range cs.Actions() {
		if c, ok := a.(k8stesting.CreateActionImpl); ok && c.GetResource().Resource == "jobs" && c.GetObject().(*batchv1.Job).Name == name {
			n++
		}
	}
	return n
}

func waitReported(t *testing.T, k *Kube) {
	t.Helper()
	poll.Until(t, 30*time.Second, "the report to reach the host", func() bool { return k.reported("alpha", 1) })
}

// After kill -9 and resume, the attempt's Job is adopted, not started again:
// a running agent is waited for, a finished one's results are collected;
// the inputs go in only when the killed process had not sent them all.
func TestKubeAdoptsTheJobOfAKilledProcess(t *testing.T) {
	for _, c := range []struct {
		name       string
		agent      corev1.ContainerState
		inputsIn   bool
		wantPushes int
	}{
		{"agent running", running, true, 0},
		{"agent finished", exited0, true, 0},
		{"inputs not yet in", running, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			k1, cs, a := killedAfterLaunch(t)
			job := jobName(k1.opts.RunID, "alpha", 1)
			setPod(t, cs, job, c.agent, running)
			pf := newPodFiles(t, k1.opts.RunID)
			pf.ready = c.inputsIn
			k2, err := newKube(clientsetAPI{cs}, pf, "agents", k1.opts)
			if err != nil {
				t.Fatal(err)
			}
			k2.poll = k1.poll
			if err := k2.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k2.Stop(context.WithoutCancel(t.Context())) })
			if _, err := cs.BatchV1().Jobs("agents").Get(t.Context(), job, metav1.GetOptions{}); err != nil {
				t.Fatalf("Start deleted the killed process's running Job: %v", err)
			}
			if err := k2.Launch(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			if err := k2.DropUnadopted(t.Context()); err != nil {
				t.Fatal(err)
			}
			if c.agent.Running != nil {
				if c.wantPushes > 0 {
					select {
					case <-pf.pushed:
					case <-time.After(30 * time.Second):
						t.Fatal("the inputs were not sent into the adopted pod")
					}
				}
				setPod(t, cs, job, exited0, running)
			}
			waitReported(t, k2)
			if b, _ := os.ReadFile(filepath.Join(a.Dir, "new.txt")); string(b) != "made in the pod\n" {
				t.Errorf("the adopted pod's results are not on the host: new.txt = %q", b)
			}
			if n := jobCreates(cs, job); n != 1 {
				t.Errorf("the attempt's Job was created %d times, want once (adopted, not started again)", n)
			}
			pf.mu.Lock()
			pushes := pf.pushes
			pf.mu.Unlock()
			if pushes != c.wantPushes {
				t.Errorf("inputs sent %d times, want %d", pushes, c.wantPushes)
			}
			waitJobGone(t, k2, job)
		})
	}
}

// A Job of the killed process whose pod can no longer deliver (its io
// container ended) is deleted and its attempt run again; Jobs no task
// adopted are deleted once the tasks in progress are relaunched.
func TestKubeRerunsWhatItCannotAdoptAndDropsTheRest(t *testing.T) {
	k1, cs, a := killedAfterLaunch(t)
	job := jobName(k1.opts.RunID, "alpha", 1)
	setPod(t, cs, job, exited0, exited0)
	stray := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: jobName(k1.opts.RunID, "beta", 2), Namespace: "agents",
		Labels:      map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k1.opts.RunID), layout.LabelRole: "attempt", layout.LabelTask: "beta"},
		Annotations: map[string]string{layout.LabelTask: "beta"}}}
	if _, err := cs.BatchV1().Jobs("agents").Create(t.Context(), stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k2, err := newKube(clientsetAPI{cs}, noExec{}, "agents", k1.opts)
	if err != nil {
		t.Fatal(err)
	}
	k2.poll = k1.poll
	if err := k2.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k2.Stop(context.WithoutCancel(t.Context())) })
	if err := k2.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if n := jobCreates(cs, job); n != 2 {
		t.Errorf("the attempt's Job was created %d times, want twice (its old pod cannot deliver: run again)", n)
	}
	if _, err := cs.BatchV1().Jobs("agents").Get(t.Context(), stray.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("a leftover Job went before the tasks were relaunched: %v", err)
	}
	if err := k2.DropUnadopted(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.BatchV1().Jobs("agents").Get(t.Context(), stray.Name, metav1.GetOptions{}); err == nil {
		t.Error("a Job no task adopted is still there after DropUnadopted")
	}
}

// The task's events reach the host's reports/ while its agent still runs,
// as through docker's bind mount, so the run shows its progress.
func TestKubeMirrorsEventsWhileTheAgentRuns(t *testing.T) {
	k, cs := newTestKube(t)
	pf := newPodFiles(t, k.opts.RunID)
	pf.events = `{"type":"tool_call","tool":"write_file"}` + "\n" + `{"type":"tool_call","tool":"shell_exec"}` + "\n" + `{"type":"par`
	k.exec = pf
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Stop(context.WithoutCancel(t.Context())) })
	if err := k.Launch(t.Context(), alphaAttempt(t, k)); err != nil {
		t.Fatal(err)
	}
	job := jobName(k.opts.RunID, "alpha", 1)
	setPod(t, cs, job, running, running)
	host := k.opts.Volumes.EventsFile("alpha")
	want := `{"type":"tool_call","tool":"write_file"}` + "\n" + `{"type":"tool_call","tool":"shell_exec"}` + "\n"
	poll.Until(t, 30*time.Second, "the host's events file to hold the agent's whole lines while it runs", func() bool {
		b, _ := os.ReadFile(host)
		return string(b) == want
	})
	setPod(t, cs, job, exited0, running)
	waitReported(t, k)
}
