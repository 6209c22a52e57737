//go:build e2e

package main

// End-to-end tests of `planagent run --runtime kubernetes` on a real
// single-node cluster (scripts/k8s-cluster.sh): the real planagent binary,
// the image `make image` built imported into the node, every attempt a Job
// whose files move over pods/exec, and the llmtest server reached by the
// pods through the CNI bridge gateway.

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// kubeGateway is where pods reach this host: the first address of the
// cluster's POD_SUBNET, which scripts/k8s-cluster.sh reads from the
// environment as the tests do (default 10.244.0.0/24; its ports likewise:
// ETCD_PORT, APISERVER_PORT, KUBELET_PORT, ... to run beside another cluster).
func kubeGateway() string {
	subnet := os.Getenv("POD_SUBNET")
	if subnet == "" {
		subnet = "10.244.0.0/24"
	}
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		panic(fmt.Sprintf("POD_SUBNET=%q: %v", subnet, err))
	}
	return p.Masked().Addr().Next().String()
}

type kubeCluster struct {
	kubeconfig string
	cs         kubernetes.Interface
}

var (
	kubeOnce sync.Once
	kubeUp   *kubeCluster
	kubeErr  error
)

// kubeE2E returns the cluster, bringing it up once per test binary
// (removed by the first test's cleanup chain: see kubeTestMainDown), or
// skips unless CODEAGENT_E2E=1 and CODEAGENT_K8S=1. KUBE_E2E_KUBECONFIG
// reuses a cluster that is already up (and leaves it up).
func kubeE2E(t testing.TB) *kubeCluster {
	t.Helper()
	if os.Getenv("CODEAGENT_E2E") != "1" || os.Getenv("CODEAGENT_K8S") != "1" {
		t.Skip("kubernetes end-to-end test: set CODEAGENT_E2E=1 CODEAGENT_K8S=1 (make e2e-k8s) to run it")
	}
	kubeOnce.Do(func() {
		kc := os.Getenv("KUBE_E2E_KUBECONFIG")
		if kc == "" {
			dir, err := os.MkdirTemp("", "codeagent-k8s-") //nolint:usetesting // the cluster outlives this test: TestMain takes it down
			if err != nil {
				kubeErr = err
				return
			}
			kubeDir = filepath.Join(dir, "cluster")
			start := time.Now()
			cmd := exec.Command("../scripts/k8s-cluster.sh", "up", kubeDir, e2eImage())
			out, err := cmd.CombinedOutput()
			if err != nil {
				kubeErr = fmt.Errorf("cluster up: %w\n%s", err, out)
				return
			}
			fmt.Fprintf(os.Stderr, "kubernetes cluster up in %s\n", time.Since(start).Round(time.Millisecond))
			kc = filepath.Join(kubeDir, "kubeconfig")
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			kubeErr = err
			return
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			kubeErr = err
			return
		}
		kubeUp = &kubeCluster{kubeconfig: kc, cs: cs}
		// A bare pod first: the CNI bridge (and its gateway address, where
		// the model listens) exists once a pod ran; its time is the
		// baseline of the attempt figures.
		start := time.Now()
		if err := bareProbe(cs); err != nil {
			kubeErr = fmt.Errorf("a bare pod of %s: %w", e2eImage(), err)
			return
		}
		fmt.Fprintf(os.Stderr, "bare pod of %s: created -> Succeeded in %s\n", e2eImage(), time.Since(start).Round(time.Millisecond))
	})
	if kubeErr != nil {
		t.Fatalf("CODEAGENT_K8S=1 but the cluster did not come up: %v", kubeErr)
	}
	return kubeUp
}

// bareProbe runs a pod of the image that exits at once and deletes it.
func bareProbe(cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "codeagent-probe-"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "probe", Image: e2eImage(), ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"/bin/sh", "-c", "true"}}}},
	}
	p, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = cs.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{}) }()
	for {
		got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch got.Status.Phase {
		case corev1.PodSucceeded:
			return nil
		case corev1.PodFailed:
			return fmt.Errorf("pod %s failed: %s", p.Name, got.Status.Message)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s: %w (phase %s)", p.Name, ctx.Err(), got.Status.Phase)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kubeDir is the cluster this test binary started ("" none); TestMain's
// kubeDown takes it down.
var kubeDir string

// kubeDown stops the cluster this binary started; called from TestMain.
func kubeDown() {
	if kubeDir == "" {
		return
	}
	out, err := exec.Command("../scripts/k8s-cluster.sh", "down", kubeDir).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster down: %v\n%s", err, out)
	}
	_ = os.RemoveAll(filepath.Dir(kubeDir))
}

// kubeRunEnv is a run env for --runtime kubernetes: the model on every
// interface requiring e2eKey, its URL through the bridge gateway.
func kubeRunEnv(t *testing.T, f *fakeModel) *runEnv {
	k := kubeE2E(t)
	e := newRunEnv(t, f, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(e2eKey))
	e.key = e2eKey
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = fmt.Sprintf("%s:%d", kubeGateway(), e.srv.Port())
	e.env = append(e.env, "CODEAGENT_RUNTIME=kubernetes", "KUBECONFIG="+k.kubeconfig, "OPENAI_BASE_URL="+u.String(),
		"CODEAGENT_CONTAINER_MEMORY=512m", "CODEAGENT_CONTAINER_CPUS=1")
	t.Cleanup(func() { assertNothingLeft(t, k) })
	return e
}

// assertNothingLeft: no Job, pod or Secret of codeagent in the namespace.
func assertNothingLeft(t *testing.T, k *kubeCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 60*time.Second)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}
	// Pods go with their Job in the background: give the garbage collector time.
	var left []string
	for {
		left = left[:0]
		jobs, err := k.cs.BatchV1().Jobs("default").List(ctx, sel)
		if err != nil {
			t.Errorf("list jobs: %v", err)
			return
		}
		pods, _ := k.cs.CoreV1().Pods("default").List(ctx, sel)
		secrets, _ := k.cs.CoreV1().Secrets("default").List(ctx, sel)
		for _, j := range jobs.Items {
			left = append(left, "job/"+j.Name)
		}
		for _, p := range pods.Items {
			left = append(left, "pod/"+p.Name)
		}
		for _, s := range secrets.Items {
			left = append(left, "secret/"+s.Name)
		}
		if len(left) == 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(left) != 0 {
		t.Errorf("left in the cluster after the run: %v", left)
	}
}

// TestE2EKubeRunThreeTasks: three tasks, each attempt a Job; the key
// reaches the agent only through the Secret (the strict server wants it),
// appears in no Job spec and in no output; nothing is left behind.
func TestE2EKubeRunThreeTasks(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := kubeRunEnv(t, f)
	k := kubeUp
	// Record every Job's spec while the run goes (a list every 200ms: a
	// Job lives seconds), to check the key is in none.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	specs := map[string]string{}
	policies := map[string]string{} // the run's NetworkPolicy (closed egress with the gateway)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			list, err := k.cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"})
			if err == nil {
				for _, j := range list.Items {
					specs[j.Name] = j.Labels[layout.LabelRole] + " " + j.String()
				}
			}
			// Every Secret and pod of the namespace, whoever made them.
			if ss, err := k.cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err == nil {
				for _, x := range ss.Items {
					specs["secret/"+x.Name] = "secret " + x.String() + string(x.Data["OPENAI_API_KEY"])
				}
			}
			if ps, err := k.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
				for _, x := range ps.Items {
					specs["pod/"+x.Name] = "pod " + x.String()
				}
			}
			if ps, err := k.cs.NetworkingV1().NetworkPolicies("default").List(ctx, metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}); err == nil {
				for _, p := range ps.Items {
					policies[p.Name] = p.String()
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// The model gateway is on by default, at this host's address toward
	// the pods (the bridge's, kubeGateway()): no kube_gateway set.
	start := time.Now()
	out, stderr, code := e.run("run", "--yes", "--json", "-v", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	t.Logf("run of three tasks on kubernetes: %s", time.Since(start).Round(time.Millisecond))
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "the attempt's pod runs") || strings.Contains(l, "inputs sent") || strings.Contains(l, "the agent exited") {
			t.Log(l)
		}
	}
	cancel()
	<-watched
	e.assertThreeTasksDone()
	if strings.Contains(out+stderr, e2eKey) {
		t.Errorf("planagent's output holds the API key")
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	jobs := 0
	for name, s := range specs {
		if strings.HasPrefix(s, "attempt ") {
			jobs++
		}
		if strings.Contains(s, e2eKey) {
			t.Errorf("%s holds the API key", name)
		}
		if strings.HasPrefix(s, "attempt ") && !strings.Contains(s, "http://"+kubeGateway()+":") {
			t.Errorf("the spec of job %s does not send its agent to the gateway at %s", name, kubeGateway())
		}
		if strings.HasPrefix(s, "attempt ") && strings.Contains(s, "SecretKeyRef") {
			t.Errorf("the spec of job %s takes the key from the Secret, not a gateway token", name)
		}
	}
	if jobs < 3 {
		t.Errorf("attempt jobs seen: %d, want at least one per task", jobs)
	}
	// Nothing secret goes to the pods (no MCP variable): no Secret at all.
	for name := range specs {
		if strings.HasPrefix(name, "secret/ca-") {
			t.Errorf("the run made %s though its pods take nothing from a Secret", name)
		}
	}
	if !strings.Contains(stderr, "the model gateway serves the attempts' pods") {
		t.Errorf("planagent did not say where its gateway serves the pods:\n%s", stderr)
	}
	assertNoKey(t, e.volumes, e2eKey)
	// The run's NetworkPolicy was there while it ran (this cluster's bridge
	// CNI does not enforce it: the object is what is checked), and is gone.
	if len(policies) != 1 {
		t.Errorf("network policies seen during the run: %v, want the run's one", policies)
	}
	for name, p := range policies {
		if !strings.Contains(p, "/32") || !strings.Contains(p, "Egress") {
			t.Errorf("network policy %s does not allow only the gateway: %s", name, p)
		}
	}
	if ps, err := k.cs.NetworkingV1().NetworkPolicies("default").List(t.Context(), metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}); err != nil || len(ps.Items) != 0 {
		t.Errorf("network policies left after the run: %v (%v)", ps, err)
	}
	// The boundary probe ran under the run's policy, and this cluster's
	// bridge CNI let it reach a service of this host beside the gateway.
	status, _, code := e.run("status", "--json")
	if code != 0 || !strings.Contains(status, `"boundary": "egress not enforced by this cluster: `) {
		t.Errorf("status --json (exit %d) does not record the probe's verdict:\n%s", code, status)
	}
	summary, err := os.ReadFile(e.volumes + "/reports/summary.md")
	if err != nil || !strings.Contains(string(summary), "egress not enforced by this cluster") {
		t.Errorf("summary.md does not record the boundary:\n%s", summary)
	}
	if !strings.Contains(stderr, "beside planagent") {
		t.Errorf("the probe's verdict does not say what it reached:\n%s", stderr)
	}
}

// The isolation scenarios of isolation_e2e_test.go with every attempt a Job.
func TestE2EKubeCheckpointsFailedAttemptLeavesNothing(t *testing.T) {
	kubeE2E(t)
	failedAttemptLeavesNothing(t, kubeRunEnv)
}

func TestE2EKubeCheckpointsConflictIsRedoneOnTheNewBase(t *testing.T) {
	kubeE2E(t)
	// A pod's results come back (and first merges) seconds after its
	// agent's last model call: second waits longer before its edit.
	conflictIsRedoneOnTheNewBase(t, kubeRunEnv, 15*time.Second)
}

// slowThenQuick is a plan whose first task's model waits 6s before its step.
func slowThenQuick() *fakeModel {
	plan := `{"title":"Slow then quick","overview":"Two tasks.","tasks":[
 {"id":"slow","description":"TOKEN-SLOW: write slow.txt","dependencies":[]},
 {"id":"quick","description":"TOKEN-QUICK: write quick.txt","dependencies":["slow"]}]}`
	return &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{
		{token: "TOKEN-SLOW", delay: 6 * time.Second, steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "slow\n"})}},
		{token: "TOKEN-QUICK", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "quick.txt", "content": "quick\n"})}},
	}}
}

// startUntilSlow starts `planagent run` and returns once the slow task's
// agent (in its pod) asked the model.
func startUntilSlow(t *testing.T, e *runEnv, f *fakeModel) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := e.command("run", "--yes", "make two files")
	errb := &strings.Builder{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case tok := <-f.started:
		if tok != "TOKEN-SLOW" {
			t.Fatalf("first task started is %s, want TOKEN-SLOW", tok)
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the slow task did not start within 90s\n%s", errb.String())
	}
	return cmd, errb
}

// planagent killed with SIGKILL while a task's pod works, then resume: the
// killed process's Job is adopted, not created again, and its agent goes on
// through the resumed gateway (same address, its token taken again): the
// request the kill cut is sent once more (the agent's DownGrace), so the
// model sees the slow task's start at most twice, never a new Job. (With
// the gateway the agent cannot finish while planagent is down: it needs the
// model, so the earlier "agent finished meanwhile" case cannot happen.)
//
// The run's NetworkPolicy the killed process left is replaced in place by
// the resumed one: the same object (UID) updated, never deleted and made
// again, so the adopted pod is under a policy all along.
func TestE2EKubePlanagentKilledThenResumed(t *testing.T) {
	f := slowThenQuick()
	e := kubeRunEnv(t, f)
	k := kubeE2E(t)
	cmd, _ := startUntilSlow(t, e, f)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	policies := k.cs.NetworkingV1().NetworkPolicies("default")
	sel := metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}
	left, err := policies.List(t.Context(), sel)
	if err != nil || len(left.Items) != 1 {
		t.Fatalf("the killed process's network policies: %v, %v; want the run's one", left, err)
	}
	// Made stale, as one a process with other ports would have left: the
	// egress proxy's port taken out.
	stale := left.Items[0].DeepCopy()
	uid := stale.UID
	stale.Spec.Egress[0].Ports = stale.Spec.Egress[0].Ports[:1]
	stale, err = policies.Update(t.Context(), stale, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel.ResourceVersion = stale.ResourceVersion
	w, err := policies.Watch(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	var seen, others []string
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*networkingv1.NetworkPolicy); ok {
				ports := 0
				for _, r := range p.Spec.Egress {
					ports += len(r.Ports)
				}
				seen = append(seen, fmt.Sprintf("%s(%d ports)", ev.Type, ports))
				if p.UID != uid {
					others = append(others, fmt.Sprintf("%s %s uid %s", ev.Type, p.Name, p.UID))
				}
			}
		}
	}()
	out, stderr, code := e.run("resume", "-v")
	w.Stop()
	<-watched
	if len(others) > 0 {
		t.Errorf("network policies other than the killed process's (uid %s) after the kill: %v", uid, others)
	}
	// Updated in place with the gateway's and the proxy's ports again,
	// then deleted by the resumed run's end (if the watch saw that before
	// it stopped); never deleted and made again.
	for i, ev := range seen {
		if strings.HasPrefix(ev, string(watch.Added)) || (strings.HasPrefix(ev, string(watch.Deleted)) && i != len(seen)-1) {
			t.Errorf("the run's policy was made again after the kill (events %v): a moment without one", seen)
			break
		}
	}
	if len(seen) == 0 || seen[0] != string(watch.Modified)+"(2 ports)" {
		t.Errorf("policy events after the kill %v, want it modified in place first, back to 2 ports", seen)
	}
	t.Logf("the run's policy after the kill: %v", seen)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "replaced in place the network policy a killed process of this run left") {
		t.Errorf("the resumed run did not replace the killed process's policy in place:\n%s", stderr)
	}
	if !strings.Contains(stderr, "adopted the attempt's job") || strings.Contains(stderr, "cannot be adopted") {
		t.Errorf("the resumed run did not adopt the killed process's Job:\n%s", stderr)
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "created the attempt's job") && strings.Contains(l, "task=slow") {
			t.Errorf("the resumed run created the slow task's Job again: %s", l)
		}
	}
	// Through the gateway: the key never went to a pod, and the strict
	// model server took every request (the adopted agent's with the key
	// the resumed gateway put in).
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	if got := e.read("workspace/slow.txt") + e.read("workspace/quick.txt"); got != "slow\nquick\n" {
		t.Errorf("workspace files = %q", got)
	}
	if n := f.startCount("TOKEN-SLOW"); n < 1 || n > 2 {
		t.Errorf("the slow task's first request reached the model %d times, want 1, or 2 when the kill cut it", n)
	}
}

// Ctrl-C mid-task: planagent deletes the run's Jobs and Secret on its way out.
func TestE2EKubeInterruptCleansUp(t *testing.T) {
	f := slowThenQuick()
	e := kubeRunEnv(t, f)
	cmd, errb := startUntilSlow(t, e, f)
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("planagent did not end within 90s of SIGINT\n%s", errb.String())
	}
	if cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("an interrupted run exited 0\n%s", errb.String())
	}
	// assertNothingLeft (the env's cleanup) checks the cluster.
}

// run --check on kubernetes: the image check and the boundary probe under
// the run's NetworkPolicy, then the verdict on stdout and exit 0, with no
// plan asked of the model and nothing left in the cluster. This cluster's
// bridge CNI does not enforce NetworkPolicy: its verdict is the warning,
// on a cluster whose plugin does, "verified".
func TestE2EKubeRunCheckReportsTheBoundary(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := kubeRunEnv(t, f)
	k := kubeUp
	start := time.Now()
	out, stderr, code := e.run("run", "--check")
	if code != 0 {
		t.Fatalf("run --check: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	t.Logf("run --check on kubernetes: %s", time.Since(start).Round(time.Millisecond))
	line := strings.TrimSpace(out)
	switch {
	case line == "boundary: verified":
	case strings.HasPrefix(line, "boundary: egress not enforced by this cluster: "):
		// What the pod reached is named, and the fix.
		if !strings.Contains(line, "beside planagent") || !strings.Contains(line, "NetworkPolicy") {
			t.Errorf("the verdict does not say what the probe reached and what to do: %q", line)
		}
		if !strings.Contains(stderr, "does not enforce the run's NetworkPolicy") {
			t.Errorf("no warning that the cluster does not enforce the policy:\nstderr:\n%s", stderr)
		}
	default:
		t.Errorf("run --check printed %q, want the boundary's verdict\nstderr:\n%s", line, stderr)
	}
	if strings.Contains(out+stderr, e2eKey) {
		t.Error("planagent's output holds the API key")
	}
	// The probe's token went through the gateway; no plan was asked for.
	for _, r := range e.srv.Requests() {
		if hasTool(r, "create_plan") {
			t.Error("run --check asked the model for a plan (a request offering create_plan)")
		}
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	ps, err := k.cs.NetworkingV1().NetworkPolicies("default").List(t.Context(), metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"})
	if err != nil || len(ps.Items) != 0 {
		t.Errorf("network policies left after run --check: %v (%v)", ps, err)
	}
	if _, err := os.Stat(e.volumes + "/reports/summary.md"); err == nil {
		t.Error("run --check wrote a summary: it should plan and run nothing")
	}
	// assertNothingLeft (the env's cleanup): no Job, pod or Secret.
}
