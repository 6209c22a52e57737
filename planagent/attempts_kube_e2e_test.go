//go:build e2e

package main

// Best-of-N attempts on the real Kubernetes cluster (issue 40: "works with
// the docker, kubernetes and local runtimes"): the scenario of
// attempts_best_e2e_test.go with every attempt a Job of its own.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// TestE2EKubeAttemptsParallel: task best's three attempts at once at
// --parallel 3, each a Job whose one pod ran its agent; 1 fails its
// acceptance, 2 passes with a large diff, 3 with a small one and is
// merged, 1 and 2 kept as refs; status --json and summary.md rank them;
// the run's NetworkPolicy was there while it ran, and no Job, pod,
// Secret or NetworkPolicy is left after.
func TestE2EKubeAttemptsParallel(t *testing.T) {
	k := kubeE2E(t)
	m := newBestModel(1, 2, 3)
	e, ws, planFile := newBestEnv(t, m, kubeRunEnv)
	seen := watchKube(t, k)

	st := runBestOfThree(t, e, m, ws, planFile, "parallel", []int{1, 2, 3}, "--runtime", "kubernetes")
	seen.stop()

	// Each attempt a Job of its own, each Job one pod, and that pod's
	// agent container ran.
	jobs := seen.byRole("attempt", "job")
	pods := seen.byRole("attempt", "pod")
	execs := seen.byRole("exec", "job")[""]
	t.Logf("attempt jobs %v; their pods %v; acceptance jobs %v; network policies %v",
		jobs, pods, execs, slices.Sorted(maps.Keys(seen.policies)))
	for n := 1; n <= 3; n++ {
		a := strconv.Itoa(n)
		if len(jobs[a]) != 1 {
			t.Errorf("attempt %d: jobs %v, want one", n, jobs[a])
		}
		if len(pods[a]) != 1 {
			t.Errorf("attempt %d: pods %v, want one", n, pods[a])
			continue
		}
		p := seen.objects["pod/"+pods[a][0]]
		if len(jobs[a]) == 1 && p.owner != jobs[a][0] {
			t.Errorf("attempt %d: pod %s belongs to %q, want its job %s", n, pods[a][0], p.owner, jobs[a][0])
		}
		if !p.agentRan {
			t.Errorf("attempt %d: the agent container of pod %s was never seen running or ended", n, pods[a][0])
		}
	}
	if len(jobs) != 3 || len(pods) != 3 {
		t.Errorf("attempt jobs %v and pods %v, want attempts 1, 2 and 3 alone", jobs, pods)
	}
	// The acceptance command ran in a fresh pod for each attempt's check,
	// and once more as the winner's merge gate.
	if len(execs) != 4 {
		t.Errorf("acceptance jobs %v, want 4: one per attempt's check and the merge gate", execs)
	}
	// All of one run, under its one NetworkPolicy. (A run id is a valid
	// label value as it is: the label carries it unchanged.)
	for name, o := range seen.objects {
		if o.run != st.ID {
			t.Errorf("%s is of run %q, want %s", name, o.run, st.ID)
		}
	}
	if len(seen.policies) != 1 {
		t.Errorf("network policies seen during the run: %v, want the run's one", seen.policies)
	}
	assertNothingLeft(t, k)
	ps, err := k.cs.NetworkingV1().NetworkPolicies("default").List(t.Context(), metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"})
	if err != nil || len(ps.Items) != 0 {
		t.Errorf("network policies left after the run: %v (%v)", ps, err)
	}
}

// kubeObject is what the watch saw of a Job or pod of codeagent.
type kubeObject struct {
	kind, role, run, attempt string
	owner                    string // a pod's Job
	agentRan                 bool   // a pod whose "agent" container was seen running or ended
}

// kubeSeen records every Job, pod and NetworkPolicy of codeagent the
// namespace had while a run went: watches, not listings, so an object
// created and deleted between two looks is seen too.
type kubeSeen struct {
	mu       sync.Mutex
	objects  map[string]*kubeObject // "job/NAME", "pod/NAME"
	policies map[string]bool
	cancel   context.CancelFunc
	done     sync.WaitGroup
}

func watchKube(t *testing.T, k *kubeCluster) *kubeSeen {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	s := &kubeSeen{objects: map[string]*kubeObject{}, policies: map[string]bool{}, cancel: cancel}
	sel := metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}
	kinds := map[string]func(context.Context, metav1.ListOptions) (watch.Interface, error){
		"job": k.cs.BatchV1().Jobs("default").Watch,
		"pod": k.cs.CoreV1().Pods("default").Watch,
		"networkpolicy": func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return k.cs.NetworkingV1().NetworkPolicies("default").Watch(ctx, o)
		},
	}
	started := make(chan error, len(kinds))
	for kind, open := range kinds {
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			s.follow(ctx, kind, open, sel, started)
		}()
	}
	for range kinds {
		if err := <-started; err != nil {
			cancel()
			s.done.Wait()
			t.Fatalf("watch the cluster: %v", err)
		}
	}
	t.Cleanup(s.stop)
	return s
}

// follow watches one kind until ctx ends, opening the watch again from
// the last version seen when the API server closes it.
func (s *kubeSeen) follow(ctx context.Context, kind string, open func(context.Context, metav1.ListOptions) (watch.Interface, error), sel metav1.ListOptions, started chan<- error) {
	first := true
	for ctx.Err() == nil {
		w, err := open(ctx, sel)
		if first {
			started <- err
			first = false
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				// Most likely the version is too old (410 Gone): start
				// again from the current state, which the watch sends
				// first as additions.
				sel.ResourceVersion = ""
				continue
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			sel.ResourceVersion = obj.GetResourceVersion()
			s.record(kind, ev.Object, obj)
		}
		w.Stop()
	}
}

func (s *kubeSeen) record(kind string, raw any, obj metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == "networkpolicy" {
		s.policies[obj.GetName()] = true
		return
	}
	key := kind + "/" + obj.GetName()
	o := s.objects[key]
	if o == nil {
		l := obj.GetLabels()
		o = &kubeObject{kind: kind, role: l[layout.LabelRole], run: l[layout.LabelRun], attempt: l[layout.LabelAttempt]}
		s.objects[key] = o
	}
	if pod, ok := raw.(*corev1.Pod); ok {
		for _, ref := range pod.OwnerReferences {
			if ref.Kind == "Job" {
				o.owner = ref.Name
			}
		}
		for _, c := range pod.Status.ContainerStatuses {
			if c.Name == "agent" && (c.State.Running != nil || c.State.Terminated != nil) {
				o.agentRan = true
			}
		}
	}
}

func (s *kubeSeen) stop() {
	s.cancel()
	s.done.Wait()
}

// byRole lists the names of the objects of one kind and role by their
// attempt label ("" for objects of no attempt), sorted.
func (s *kubeSeen) byRole(role, kind string) map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for key, o := range s.objects {
		if o.kind == kind && o.role == role {
			out[o.attempt] = append(out[o.attempt], strings.TrimPrefix(key, kind+"/"))
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}
