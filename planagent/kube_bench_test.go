//go:build e2e

package main

// Benchmarks of --runtime kubernetes on the real single-node cluster of the
// e2e tests (kubeE2E: CODEAGENT_E2E=1 CODEAGENT_K8S=1, brought up by
// scripts/k8s-cluster.sh, or KUBE_E2E_KUBECONFIG): `make bench` runs them
// when it is root with kubectl (scripts/bench.sh).

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// BenchmarkKubeJobToHeartbeat: per attempt, its Job created → the agent in
// the pod alive and talking to this host, against a bare pod of the same
// image on the same cluster, created → its first request to this host
// (`wget`), over at least 10 of each; reports both medians and their ratio.
// The agent's sign of life is its first model request: codingagent writes
// its first heartbeat (in the pod's emptyDir, which the host does not see)
// on starting and asks the model right after taking the task, so the
// figure bounds Job → first heartbeat from above. Between the two: the
// Job controller creating the pod, the init container copying codingagent,
// the inputs streamed over pods/exec. The attempts are the tasks of one run
// at --parallel 1 (one attempt at a time, as the bare pods), whose attempts
// per minute are reported too.
func BenchmarkKubeJobToHeartbeat(b *testing.B) {
	k := kubeE2E(b)
	n := max(b.N, 10)
	bare := barePodSamples(b, k, n)
	r := kubeBenchRun(b, k, n, 1)
	jobs := r.jobToFirstRequest(b)
	slices.Sort(bare)
	slices.Sort(jobs)
	med := func(s []time.Duration) time.Duration { return s[len(s)/2] }
	b.ReportMetric(float64(med(jobs).Milliseconds()), "ms-median-job")
	b.ReportMetric(float64(med(bare).Milliseconds()), "ms-median-bare-pod")
	b.ReportMetric(float64(med(jobs))/float64(med(bare)), "ratio")
	b.ReportMetric(r.attemptsPerMinute(), "attempts/min-parallel-1")
	b.Logf("Job created -> agent's first request: median %s, range %s-%s (%d attempts)", ms(med(jobs)), ms(jobs[0]), ms(jobs[len(jobs)-1]), len(jobs))
	b.Logf("bare pod of %s created -> its first request: median %s, range %s-%s (%d pods)", e2eImage(), ms(med(bare)), ms(bare[0]), ms(bare[len(bare)-1]), len(bare))
	if len(r.podRuns) > 0 && len(r.inputsSent) > 0 {
		b.ReportMetric(float64(med(r.podRuns).Milliseconds()), "ms-median-pod-runs")
		b.ReportMetric(float64(med(r.inputsSent).Milliseconds()), "ms-median-inputs-sent")
		b.Logf("planagent's log, since it created the Job: io container seen running median %s, inputs sent median %s",
			ms(med(r.podRuns)), ms(med(r.inputsSent)))
	}
	b.Logf("ratio of the medians %.2f; %d attempts at --parallel 1 in %s: %.1f attempts/min", float64(med(jobs))/float64(med(bare)), n, ms(r.span()), r.attemptsPerMinute())
}

// BenchmarkKubeParallel4: attempts per minute at --parallel 4, a run of 12
// independent tasks (one tool call each), from the first attempt's Job
// created to the last one deleted (planagent deletes a Job once it has its
// results), and the whole run's wall time (planning, the image probe Job,
// the end of the run included).
func BenchmarkKubeParallel4(b *testing.B) {
	k := kubeE2E(b)
	var perMin []float64
	var walls []time.Duration
	for b.Loop() {
		r := kubeBenchRun(b, k, 12, 4)
		perMin = append(perMin, r.attemptsPerMinute())
		walls = append(walls, r.wall)
		b.Logf("12 attempts at --parallel 4: %s from the first Job created to the last deleted, %.1f attempts/min; run %s, at most %d Jobs at once",
			ms(r.span()), r.attemptsPerMinute(), ms(r.wall), r.maxAtOnce)
	}
	slices.Sort(perMin)
	slices.Sort(walls)
	b.ReportMetric(perMin[len(perMin)/2], "attempts/min")
	b.ReportMetric(walls[len(walls)/2].Seconds(), "s-run")
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// barePodSamples runs n pods of the image one after the other, each
// `wget`ting this host through the bridge gateway, and returns, per pod,
// its Create call → the request's arrival.
func barePodSamples(b *testing.B, k *kubeCluster, n int) []time.Duration {
	b.Helper()
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if _, ok := arrived[r.URL.Path]; !ok {
			arrived[r.URL.Path] = time.Now()
		}
		mu.Unlock()
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := fmt.Sprintf("http://%s:%d", kubeGateway(), ln.Addr().(*net.TCPAddr).Port)
	ctx := b.Context()
	pods := k.cs.CoreV1().Pods("default")
	no := false
	var out []time.Duration
	for i := range n {
		path := fmt.Sprintf("/bare-%d", i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "codeagent-bench-bare-"},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
				Containers: []corev1.Container{{Name: "bare", Image: e2eImage(), ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"/bin/sh", "-c", "wget -q -O /dev/null " + url + path}}}},
		}
		began := time.Now()
		p, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		var got time.Time
		for {
			mu.Lock()
			got = arrived[path]
			mu.Unlock()
			if !got.IsZero() {
				break
			}
			if time.Now().After(deadline) {
				st, _ := pods.Get(ctx, p.Name, metav1.GetOptions{})
				b.Fatalf("bare pod %s: no request within a minute (status %+v)", p.Name, st.Status)
			}
			time.Sleep(5 * time.Millisecond)
		}
		out = append(out, got.Sub(began))
		// The pod goes before the next starts, as an attempt's Job does.
		zero := int64(0)
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := pods.Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

// kubeRun is what one `planagent run --runtime kubernetes` of the
// benchmarks saw: per task, its attempt Job's creation and deletion as the
// watch reported them and its agent's first model request.
type kubeRun struct {
	created, deleted, firstRequest map[string]time.Time
	maxAtOnce                      int
	relists                        int // times the watch had to be set up again
	// From planagent's -v log, per attempt, since it created the Job: the
	// io container seen running (polled every 300ms), the inputs sent.
	podRuns, inputsSent []time.Duration
	wall                time.Duration
}

// kubeBenchRun runs planagent on a plan of n independent tasks, each one
// write_file call, at the given --parallel.
func kubeBenchRun(b *testing.B, k *kubeCluster, n, parallel int) *kubeRun {
	b.Helper()
	buildPrograms(b)
	var tasks []scriptTask
	var plan strings.Builder
	plan.WriteString(`{"title":"Bench","overview":"Independent files.","tasks":[`)
	for i := range n {
		tok := fmt.Sprintf("TOKEN-B%02d", i)
		if i > 0 {
			plan.WriteString(",")
		}
		fmt.Fprintf(&plan, `{"id":"t%02d","title":"File %d","description":"%s: write f%02d.txt","dependencies":[]}`, i, i, tok, i)
		tasks = append(tasks, scriptTask{token: tok, steps: []llmtest.ToolCall{
			llmtest.Call("write_file", map[string]any{"path": fmt.Sprintf("f%02d.txt", i), "content": "x\n"})}})
	}
	plan.WriteString("]}")
	f := &fakeModel{plan: plan.String(), tasks: tasks, starts: map[string]int{}, started: make(chan string, 4*n)}
	srv := llmtest.New(b, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(e2eKey))
	srv.Handle(f.handle)
	r := &kubeRun{created: map[string]time.Time{}, deleted: map[string]time.Time{}, firstRequest: map[string]time.Time{}}

	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Go(func() { r.watchAttemptJobs(ctx, k, &mu, ready) })
	select {
	case <-ready:
	case <-time.After(time.Minute):
		b.Fatal("could not watch the attempt Jobs within a minute")
	}
	wg.Go(func() {
		for {
			select {
			case tok := <-f.started:
				mu.Lock()
				if _, ok := r.firstRequest[tok]; !ok {
					r.firstRequest[tok] = time.Now()
				}
				mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	})

	dir := b.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "planagent"), "run", "-v", "--yes", "--parallel", fmt.Sprint(parallel), "write the files")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+e2eKey,
		fmt.Sprintf("OPENAI_BASE_URL=http://%s:%d/v1", kubeGateway(), srv.Port()), "OPENAI_MODEL=test-model",
		"CODEAGENT_VOLUMES_DIR="+filepath.Join(dir, "volumes"), "CODEAGENT_RUNTIME=kubernetes", "KUBECONFIG="+k.kubeconfig,
		"CODEAGENT_RETRIES=0", "CODEAGENT_CONTAINER_MEMORY=512m", "CODEAGENT_CONTAINER_CPUS=1")
	began := time.Now()
	out, err := cmd.CombinedOutput()
	r.wall = time.Since(began)
	if err != nil {
		b.Fatalf("planagent run: %v\n%s", err, out)
	}
	// The last Job's deletion reaches the watch a moment after planagent exits.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		d := len(r.deleted)
		mu.Unlock()
		if d >= n || time.Now().After(deadline) {
			break
		}
	}
	cancel()
	wg.Wait()
	r.podRuns, r.inputsSent = afterOf(out, "the attempt's pod runs"), afterOf(out, "inputs sent")
	if r.relists > 0 {
		b.Logf("the Jobs' watch was set up again %d times: a Job seen by a list then is timed late", r.relists)
	}
	if len(r.created) != n || len(r.deleted) != n || len(r.firstRequest) != n {
		b.Fatalf("%d tasks: %d attempt Jobs created, %d deleted, %d agents asked the model\n%s", n, len(r.created), len(r.deleted), len(r.firstRequest), out)
	}
	return r
}

// watchAttemptJobs records the attempt Jobs' creation and deletion until
// ctx ends: a list, then a watch from its resource version (a watch from
// "now" can fail with "Too large resource version" while the API server's
// cache catches up), listed again after an error or a closed watch (what
// the list shows and was not seen is taken as created then).
func (r *kubeRun) watchAttemptJobs(ctx context.Context, k *kubeCluster, mu *sync.Mutex, ready chan<- struct{}) {
	jobs := k.cs.BatchV1().Jobs("default")
	sel := layout.LabelRole + "=attempt"
	running := map[string]bool{}
	seen := func(typ watch.EventType, j *batchv1.Job) {
		task := j.Labels[layout.LabelTask]
		mu.Lock()
		defer mu.Unlock()
		switch typ {
		case watch.Added:
			if _, ok := r.created[task]; !ok {
				r.created[task] = time.Now()
				running[task] = true
				r.maxAtOnce = max(r.maxAtOnce, len(running))
			}
		case watch.Deleted:
			if _, ok := r.deleted[task]; !ok {
				r.deleted[task] = time.Now()
				delete(running, task)
			}
		}
	}
	for ctx.Err() == nil {
		list, err := jobs.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		listed := map[string]bool{}
		for i := range list.Items {
			seen(watch.Added, &list.Items[i])
			listed[list.Items[i].Labels[layout.LabelTask]] = true
		}
		mu.Lock()
		for task := range running {
			if !listed[task] {
				r.deleted[task] = time.Now()
				delete(running, task)
			}
		}
		mu.Unlock()
		w, err := jobs.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if ready != nil {
			close(ready)
			ready = nil
		} else {
			mu.Lock()
			r.relists++
			mu.Unlock()
		}
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok { // an ERROR event: list and watch again
				break
			}
			seen(ev.Type, j)
		}
		w.Stop()
	}
}

// jobToFirstRequest: per task, its Job created → its agent's first request.
func (r *kubeRun) jobToFirstRequest(b *testing.B) []time.Duration {
	var out []time.Duration
	for task, c := range r.created {
		tok := "TOKEN-B" + strings.TrimPrefix(task, "t")
		q, ok := r.firstRequest[tok]
		if !ok {
			b.Fatalf("no request of task %s's agent", task)
		}
		out = append(out, q.Sub(c))
	}
	return out
}

// afterOf collects the after= durations of planagent's log lines with msg.
func afterOf(log []byte, msg string) []time.Duration {
	var out []time.Duration
	for _, l := range strings.Split(string(log), "\n") {
		if !strings.Contains(l, msg) {
			continue
		}
		_, rest, ok := strings.Cut(l, " after=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(rest, " ")
		if d, err := time.ParseDuration(v); err == nil {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// span: the first attempt Job created → the last deleted.
func (r *kubeRun) span() time.Duration {
	var first, last time.Time
	for _, c := range r.created {
		if first.IsZero() || c.Before(first) {
			first = c
		}
	}
	for _, d := range r.deleted {
		if d.After(last) {
			last = d
		}
	}
	return last.Sub(first)
}

func (r *kubeRun) attemptsPerMinute() float64 {
	return float64(len(r.created)) / r.span().Minutes()
}
