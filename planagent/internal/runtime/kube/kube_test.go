//go:build clientgo

package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

const kubeTestKey = "sk-kube-unit-0123456789-SECRET"

// noExec is a pods/exec that must not be reached in these tests.
type noExec struct{}

func (noExec) Exec(context.Context, string, string, string, []string, io.Reader, io.Writer) error {
	return io.ErrUnexpectedEOF
}

func newTestKube(t *testing.T) (*Kube, *fake.Clientset) {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	// As planagent does before it starts a runtime: without reports/, the
	// events mirror's first write could come before the heartbeat made it.
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	k, err := newKube(clientsetAPI{cs}, noExec{}, "agents", Options{
		Volumes: l, RunID: "run-20261125-1", Image: "toolchain:1", TaskTimeout: 20 * time.Minute,
		Memory: "1g", CPUs: 1.5,
		Env: map[string]string{"OPENAI_API_KEY": kubeTestKey, "OPENAI_MODEL": "m", "OPENAI_BASE_URL": "http://10.0.0.1:8080/v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	k.poll = 20 * time.Millisecond // the fake API server answers at once
	return k, cs
}

// TestKubeJobSpec checks every field the issue asks of an attempt's Job.
func TestKubeJobSpec(t *testing.T) {
	k, _ := newTestKube(t)
	j := k.jobSpec(podSpec{name: jobName("run-20261125-1", "alpha", 2), role: "attempt", task: "alpha", attempt: 2,
		deadline: 1200, command: []string{layout.AgentBinary, "watch", "--task", "alpha"}, workdir: layout.VolumesDir + "/attempts/x", withAgent: true})
	if j.Namespace != "agents" {
		t.Errorf("namespace %q", j.Namespace)
	}
	want := map[string]string{layout.LabelManaged: "true", layout.LabelRun: "run-20261125-1", layout.LabelTask: "alpha", layout.LabelAttempt: "2", layout.LabelRole: "attempt"}
	for key, v := range want {
		if j.Labels[key] != v || j.Spec.Template.Labels[key] != v {
			t.Errorf("label %s = %q (pod %q), want %q", key, j.Labels[key], j.Spec.Template.Labels[key], v)
		}
	}
	if j.Annotations[layout.LabelTask] != "alpha" || j.Annotations[layout.LabelRun] != "run-20261125-1" {
		t.Errorf("annotations %v", j.Annotations)
	}
	s := j.Spec
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		t.Errorf("backoffLimit %v, want 0", s.BackoffLimit)
	}
	if s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 1200 {
		t.Errorf("activeDeadlineSeconds %v, want the task timeout 1200", s.ActiveDeadlineSeconds)
	}
	if s.TTLSecondsAfterFinished == nil || *s.TTLSecondsAfterFinished <= 0 {
		t.Errorf("ttlSecondsAfterFinished %v", s.TTLSecondsAfterFinished)
	}
	p := s.Template.Spec
	if p.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q", p.RestartPolicy)
	}
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		t.Error("the service account token is mounted")
	}
	if ps := p.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", ps)
	}
	if len(p.InitContainers) != 0 || len(p.Containers) != 2 {
		t.Fatalf("containers: %d init, %d, want 0 and 2 (codingagent comes with the inputs)", len(p.InitContainers), len(p.Containers))
	}
	for _, c := range p.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s security context %+v", c.Name, sc)
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("container %s imagePullPolicy %q", c.Name, c.ImagePullPolicy)
		}
	}
	agent, ioc := p.Containers[0], p.Containers[1]
	if agent.Image != "toolchain:1" || ioc.Image != layout.DefaultImage {
		t.Errorf("images: agent %s, io %s", agent.Image, ioc.Image)
	}
	cmd := strings.Join(agent.Command, " ")
	if !strings.Contains(cmd, kubeReady) || !strings.Contains(cmd, layout.AgentBinary+" watch --task alpha") {
		t.Errorf("agent command %q: want it to wait for %s, then run codingagent", cmd, kubeReady)
	}
	if got := agent.Resources.Limits.Memory().Value(); got != 1<<30 {
		t.Errorf("memory limit %d", got)
	}
	if got := agent.Resources.Limits.Cpu().MilliValue(); got != 1500 {
		t.Errorf("cpu limit %dm", got)
	}
	var fromSecret bool
	for _, e := range agent.Env {
		if e.Name == "OPENAI_API_KEY" {
			fromSecret = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
				e.ValueFrom.SecretKeyRef.Name == k.secret && e.ValueFrom.SecretKeyRef.Key == "OPENAI_API_KEY"
		}
	}
	if !fromSecret {
		t.Errorf("the API key does not come from the run's Secret: %+v", agent.Env)
	}
	for _, c := range []corev1.Container{ioc} {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "OPENAI_") {
				t.Errorf("container %s gets %s", c.Name, e.Name)
			}
		}
	}
	b, _ := json.Marshal(j)
	if bytes.Contains(b, []byte(kubeTestKey)) {
		t.Error("the Job spec holds the API key")
	}
}

// An acceptance command's Job: no codingagent, no model settings.
func TestKubeExecJobSpec(t *testing.T) {
	k, _ := newTestKube(t)
	j := k.jobSpec(podSpec{name: execJobName("run-20261125-1", 3), role: "exec", deadline: 60, command: []string{"/bin/sh", "-c", "make test"}, workdir: layout.WorkspaceDir})
	p := j.Spec.Template.Spec
	if len(p.InitContainers) != 0 {
		t.Errorf("init containers %v", p.InitContainers)
	}
	for _, e := range p.Containers[0].Env {
		if strings.HasPrefix(e.Name, "OPENAI_") {
			t.Errorf("the acceptance command gets %s", e.Name)
		}
	}
	if j.Labels[layout.LabelRole] != "exec" {
		t.Errorf("role %q", j.Labels[layout.LabelRole])
	}
}

func TestKubeNames(t *testing.T) {
	long := strings.Repeat("Very_Long.Task/ID", 8)
	names := map[string]bool{}
	for _, c := range []struct {
		run, task string
		n         int
	}{
		{"run-20261125-1", "alpha", 1}, {"run-20261125-1", "alpha", 2}, {"run-20261125-1", long, 1},
		{"run-20261125-1", long + "x", 1}, {"RUN_A", "Task.1", 1}, {"run-a", "task-1", 1},
	} {
		name := jobName(c.run, c.task, c.n)
		if name != jobName(c.run, c.task, c.n) {
			t.Errorf("jobName(%q, %q, %d) is not deterministic", c.run, c.task, c.n)
		}
		if errs := validation.IsDNS1123Label(name); len(errs) != 0 {
			t.Errorf("jobName(%q, %q, %d) = %q: %v", c.run, c.task, c.n, name, errs)
		}
		if names[name] {
			t.Errorf("jobName(%q, %q, %d) = %q twice", c.run, c.task, c.n, name)
		}
		names[name] = true
		if v := labelValue(c.task); len(validation.IsValidLabelValue(v)) != 0 {
			t.Errorf("labelValue(%q) = %q: %v", c.task, v, validation.IsValidLabelValue(v))
		}
	}
	if got := jobName("run-20261125-1", "alpha", 1); got != "ca-run-20261125-1-alpha-a1" {
		t.Errorf("a short name is %q, want it readable", got)
	}
}

// Start creates the run's Secret and removes the run's leftover Jobs; Stop
// deletes every Job of the run with background propagation and the Secret.
func TestKubeStartStopCleanup(t *testing.T) {
	k, cs := newTestKube(t)
	ctx := t.Context()
	leftover := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "ca-old", Namespace: "agents",
		Labels: map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID)}}}
	other := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "ca-other", Namespace: "agents",
		Labels: map[string]string{layout.LabelManaged: "true", layout.LabelRun: "another-run"}}}
	for _, j := range []*batchv1.Job{leftover, other} {
		if _, err := cs.BatchV1().Jobs("agents").Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sec, err := cs.CoreV1().Secrets("agents").Get(ctx, k.secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the run's secret: %v", err)
	}
	if string(sec.Data["OPENAI_API_KEY"]) != kubeTestKey {
		t.Error("the secret does not hold the key")
	}
	if _, err := cs.BatchV1().Jobs("agents").Get(ctx, "ca-old", metav1.GetOptions{}); err == nil {
		t.Error("the run's leftover Job is still there after Start")
	}
	if _, err := cs.BatchV1().Jobs("agents").Get(ctx, "ca-other", metav1.GetOptions{}); err != nil {
		t.Error("another run's Job was deleted")
	}
	dir := filepath.Join(k.opts.Volumes.Attempts(), "r", "alpha-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(ctx, Attempt{RunID: k.opts.RunID, TaskID: "alpha", Attempt: 1, Dir: dir, Rel: "attempts/r/alpha-1"}); err != nil {
		t.Fatal(err)
	}
	name := jobName(k.opts.RunID, "alpha", 1)
	if _, err := cs.BatchV1().Jobs("agents").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("Launch created no job %s: %v", name, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel() // Stop must work with a cancelled context
	if err := k.Stop(cctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.BatchV1().Jobs("agents").Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Error("the attempt's Job is still there after Stop")
	}
	if _, err := cs.CoreV1().Secrets("agents").Get(ctx, k.secret, metav1.GetOptions{}); err == nil {
		t.Error("the run's secret is still there after Stop")
	}
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "jobs" {
			if pp := d.DeleteOptions.PropagationPolicy; pp == nil || *pp != metav1.DeletePropagationBackground {
				t.Errorf("job %s deleted without background propagation: its pods would stay", d.Name)
			}
		}
		if c, ok := a.(k8stesting.CreateActionImpl); ok && c.GetResource().Resource == "jobs" {
			b, _ := json.Marshal(c.Object)
			if bytes.Contains(b, []byte(kubeTestKey)) {
				t.Error("a created Job holds the API key")
			}
		}
	}
	if err := k.Stop(ctx); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// The results come from a pod planagent does not trust: nothing may land
// outside the target directory, through ".." or through a symlink the
// stream itself planted.
func TestExtractTarStaysInside(t *testing.T) {
	outside := t.TempDir()
	root := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "ok.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("ok"))
	_ = tw.WriteHeader(&tar.Header{Name: "../../escape.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.WriteHeader(&tar.Header{Name: "link", Linkname: outside, Typeflag: tar.TypeSymlink})
	_ = tw.WriteHeader(&tar.Header{Name: "link/pwned", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	err := extractTar(&buf, root, func(n string) (string, bool) { return n, true })
	if err == nil {
		t.Error("a file through a planted symlink was accepted")
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("the stream wrote through its symlink outside the directory")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(root)), "escape.txt")); err == nil {
		t.Fatal(`".." escaped the directory`)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "ok.txt")); string(b) != "ok" {
		t.Errorf("ok.txt = %q", b)
	}
}

// writeTar and replaceDir round-trip a tree: files, modes, symlinks kept
// as links; files the pod deleted are gone on the host.
func TestTarRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	_ = os.MkdirAll(filepath.Join(src, "sub", ".git"), 0o755)
	_ = os.WriteFile(filepath.Join(src, "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	_ = os.WriteFile(filepath.Join(src, "sub", ".git", "HEAD"), []byte("ref\n"), 0o644)
	_ = os.Symlink("sub/run.sh", filepath.Join(src, "link"))
	_ = os.MkdirAll(dst, 0o755)
	_ = os.WriteFile(filepath.Join(dst, "deleted.txt"), []byte("old"), 0o644)
	var buf bytes.Buffer
	if err := writeTar(&buf, []tarEntry{{host: src, name: "attempts/x"}}); err != nil {
		t.Fatal(err)
	}
	err := replaceDir(&buf, dst, func(name string) (string, bool) {
		r, ok := strings.CutPrefix(name, "attempts/x/")
		return r, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "sub", "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "sub/run.sh" {
		t.Errorf("link: %q %v", l, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "sub", ".git", "HEAD")); string(b) != "ref\n" {
		t.Errorf(".git/HEAD = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dst, "deleted.txt")); err == nil {
		t.Error("a file absent from the stream stayed")
	}
}

// The volumes inside a workspace stay out of the workspace's stream.
func TestWriteTarSkipsTheVolumes(t *testing.T) {
	ws := t.TempDir()
	_ = os.MkdirAll(filepath.Join(ws, "volumes", "attempts"), 0o755)
	_ = os.WriteFile(filepath.Join(ws, "volumes", "attempts", "big"), []byte("x"), 0o644)
	_ = os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644)
	var buf bytes.Buffer
	if err := writeTar(&buf, []tarEntry{{host: ws, name: "workspace", skip: filepath.Join(ws, "volumes")}}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	if got := strings.Join(names, " "); strings.Contains(got, "volumes") || !strings.Contains(got, "workspace/main.go") {
		t.Errorf("streamed %v", names)
	}
}

// An attempt without its own copy is refused: its results would replace the workspace.
func TestKubeLaunchNeedsACopy(t *testing.T) {
	k, _ := newTestKube(t)
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Stop(t.Context()) }()
	err := k.Launch(t.Context(), Attempt{RunID: k.opts.RunID, TaskID: "alpha", Attempt: 1, Dir: k.opts.Volumes.Workspace()})
	if err == nil || !strings.Contains(err.Error(), "own copy") {
		t.Errorf("err = %v", err)
	}
}

// A resumed run deletes and creates again a Job of the same name: the old
// Job's pod, terminating under the same job-name label, is not the new one's.
func TestOwnPodSkipsAnEarlierJobsPod(t *testing.T) {
	now := metav1.Now()
	owned := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{UID: types.UID(uid)}}
	}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "old", OwnerReferences: owned("u1")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "dying", OwnerReferences: owned("u2"), DeletionTimestamp: &now}},
		{ObjectMeta: metav1.ObjectMeta{Name: "new", OwnerReferences: owned("u2")}},
	}
	if p := ownPod(pods, "u2"); p == nil || p.Name != "new" {
		t.Errorf("ownPod = %v, want the new Job's pod", p)
	}
	if p := ownPod(pods[:2], "u2"); p != nil {
		t.Errorf("ownPod = %s, want none", p.Name)
	}
}
