//go:build e2e

package main

// planagent itself as a Job in the cluster: examples/kubernetes/ applied as
// shipped (rbac.yaml, planagent.yaml; config.yaml validated by the API
// server, replaced by the test's own settings), the image `make image`
// built, in-cluster config from the ServiceAccount's token, every attempt a
// Job that planagent's pod creates and talks to over pods/exec.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

const manifests = "../examples/kubernetes"

// kubectl runs kubectl against the test cluster.
func kubectl(t *testing.T, k *kubeCluster, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestE2EKubeManifestsServerDryRun: every shipped manifest is accepted by
// the API server (schema, defaults, admission) in a fresh namespace.
func TestE2EKubeManifestsServerDryRun(t *testing.T) {
	k := kubeE2E(t)
	ns := kubeNamespace(t, k, "codeagent-dryrun")
	out := kubectl(t, k, "apply", "--dry-run=server", "-n", ns, "-f", manifests)
	for _, want := range []string{"role.rbac.authorization.k8s.io/codeagent-planagent", "rolebinding.rbac.authorization.k8s.io/codeagent-planagent",
		"serviceaccount/planagent", "persistentvolumeclaim/codeagent-volumes", "configmap/planagent-config", "job.batch/planagent"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %s:\n%s", want, out)
		}
	}
}

// kubeNamespace creates a namespace for one test, deleted at its end.
func kubeNamespace(t *testing.T, k *kubeCluster, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := k.cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.cs.CoreV1().Namespaces().Delete(context.WithoutCancel(t.Context()), name, metav1.DeleteOptions{})
	})
	return name
}

// TestE2EKubePlanagentAsJob applies examples/kubernetes/ (rbac.yaml and
// planagent.yaml unchanged) with a hostPath PersistentVolume for the claim
// (the test cluster has no provisioner), the test's ConfigMap (the fake
// model through the bridge gateway) and the key's Secret; planagent's Job
// plans and runs the three tasks as Jobs of their own, and the volumes tree
// on the volume holds their results.
//
// A quirk of the test cluster, not needed on a normal one: it runs no
// kube-proxy, so the kubernetes Service's ClusterIP that the in-cluster
// config reads from KUBERNETES_SERVICE_HOST is not routed. The test forwards
// the bridge gateway's address to the API server (whose certificate names
// it) and sets KUBERNETES_SERVICE_HOST/PORT to it in the ConfigMap (envFrom
// overrides the variables the kubelet sets).
func TestE2EKubePlanagentAsJob(t *testing.T) {
	k := kubeE2E(t)
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(e2eKey))
	e.key = e2eKey
	ns := kubeNamespace(t, k, "codeagent-incluster")
	ctx := t.Context()

	// The volumes tree: a host directory the pod's uid owns, as the claim's volume.
	e.volumes = filepath.Join(e.dir, "volumes")
	if err := os.MkdirAll(e.volumes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.volumes, 10001, 10001); err != nil {
		t.Fatalf("chown the volume's directory (the tests run as root): %v", err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-volumes"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "codeagent-volumes"},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: e.volumes}},
		},
	}
	if _, err := k.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.cs.CoreV1().PersistentVolumes().Delete(context.WithoutCancel(t.Context()), pv.Name, metav1.DeleteOptions{})
	})

	apiHost := kubeAPIHostPort(t, k)
	fwd := forwardTCP(t, "0.0.0.0:0", apiHost)
	gw := kubeGateway()
	model, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	model.Host = fmt.Sprintf("%s:%d", gw, e.srv.Port())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planagent-config"}, Data: map[string]string{
		"TASK": "write greeting files", "OPENAI_BASE_URL": model.String(), "OPENAI_MODEL": "test-model",
		"CODEAGENT_IMAGE": e2eImage(), "CODEAGENT_RETRIES": "0",
		"CODEAGENT_CONTAINER_MEMORY": "512m", "CODEAGENT_CONTAINER_CPUS": "1",
		// The test cluster's quirk (see above).
		"KUBERNETES_SERVICE_HOST": gw, "KUBERNETES_SERVICE_PORT": strconv.Itoa(fwd),
	}}
	if _, err := k.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "codeagent-model"}, StringData: map[string]string{"OPENAI_API_KEY": e2eKey}}
	if _, err := k.cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	kubectl(t, k, "apply", "-n", ns, "-f", filepath.Join(manifests, "rbac.yaml"), "-f", filepath.Join(manifests, "planagent.yaml"))
	job := waitJobDone(t, k, ns, "planagent", 4*time.Minute)
	logs := kubectl(t, k, "logs", "-n", ns, "job/planagent")
	if job.Status.Succeeded != 1 {
		t.Fatalf("planagent's Job did not succeed: %+v\nits log:\n%s", job.Status.Conditions, logs)
	}
	done := time.Now()
	t.Logf("planagent as a Job: applied -> Complete in %s", done.Sub(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("planagent's log:\n%s", logs)
	}
	e.assertThreeTasksDone()
	if strings.Contains(logs, e2eKey) {
		t.Errorf("planagent's log holds the API key")
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	assertNoKey(t, e.volumes, e2eKey)
	// planagent's pod removed its attempts' Jobs, pods and the run's Secret.
	sel := metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}
	deadline := time.Now().Add(time.Minute)
	for {
		jobs, err1 := k.cs.BatchV1().Jobs(ns).List(ctx, sel)
		pods, err2 := k.cs.CoreV1().Pods(ns).List(ctx, sel)
		secrets, err3 := k.cs.CoreV1().Secrets(ns).List(ctx, sel)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		n := len(jobs.Items) + len(pods.Items) + len(secrets.Items)
		if n == 0 {
			t.Logf("no Job, pod or Secret of the run left %s after planagent's Job completed", time.Since(done).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left in %s after the run: %d jobs, %d pods, %d secrets", ns, len(jobs.Items), len(pods.Items), len(secrets.Items))
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// kubeAPIHostPort is the API server's host:port from the kubeconfig.
func kubeAPIHostPort(t *testing.T, k *kubeCluster) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// forwardTCP forwards connections to listen (its port returned) to target
// until the test ends.
func forwardTCP(t *testing.T, listen, target string) int {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c); _ = u.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, u)
			}()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// waitJobDone waits for the Job's Complete or Failed condition.
func waitJobDone(t *testing.T, k *kubeCluster, ns, name string, timeout time.Duration) *batchv1.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for {
		j, err := k.cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					return j
				}
			}
		}
		select {
		case <-ctx.Done():
			out, _ := exec.Command("kubectl", "--kubeconfig", k.kubeconfig, "-n", ns, "describe", "pods").CombinedOutput()
			logs, _ := exec.Command("kubectl", "--kubeconfig", k.kubeconfig, "-n", ns, "logs", "job/"+name).CombinedOutput()
			t.Fatalf("job %s/%s not done within %s\n%s\nits log:\n%s", ns, name, timeout, out, logs)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
