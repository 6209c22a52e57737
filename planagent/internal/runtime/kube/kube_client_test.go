//go:build clientgo

package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// clientsetAPI serves kubeAPI from a client-go clientset: the fake one in
// the runtime's tests, the real one where kubeClient is compared with it.
type clientsetAPI struct{ cs kubernetes.Interface }

func (c clientsetAPI) Jobs(ns string) kubeJobs       { return c.cs.BatchV1().Jobs(ns) }
func (c clientsetAPI) Pods(ns string) kubePods       { return c.cs.CoreV1().Pods(ns) }
func (c clientsetAPI) Secrets(ns string) kubeSecrets { return c.cs.CoreV1().Secrets(ns) }
func (c clientsetAPI) Namespaces() kubeNamespaces    { return c.cs.CoreV1().Namespaces() }
func (c clientsetAPI) NetworkPolicies(ns string) kubeNetworkPolicies {
	return c.cs.NetworkingV1().NetworkPolicies(ns)
}

// apiRecorder is an API server that notes each request and answers it with
// a small object of the kind asked for (a Status for a delete, a 404 for
// names starting with "missing", text for a pod's log).
type apiRecorder struct {
	mu   sync.Mutex
	reqs []string
}

func (a *apiRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.reqs = append(a.reqs, fmt.Sprintf("%s %s?%s content-type=%q accept=%q user-agent=%q auth=%q body=%x",
		r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Accept"), r.Header.Get("User-Agent"), r.Header.Get("Authorization"), body))
	a.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	last := parts[len(parts)-1]
	if strings.HasPrefix(last, "missing") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, last)
		return
	}
	if last == "log" {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "line one\nline two\n")
		return
	}
	if r.Method == http.MethodDelete {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		return
	}
	api, rest := "v1", parts[2:] // /api/v1/...
	if parts[0] == "apis" {
		api, rest = parts[1]+"/"+parts[2], parts[3:] // /apis/<group>/<version>/...
	}
	// namespaces/<ns> is a namespace; namespaces/<ns>/<resource> a list (or
	// a create); namespaces/<ns>/<resource>/<name> an object.
	resource, name := "namespaces", rest[len(rest)-1]
	if len(rest) > 2 {
		resource, name = rest[2], strings.Join(rest[3:], "")
	}
	kind := map[string]string{"jobs": "Job", "pods": "Pod", "secrets": "Secret", "namespaces": "Namespace"}[resource]
	w.Header().Set("Content-Type", "application/json")
	item := `{"metadata":{"name":"x1","namespace":"team","uid":"u-1","labels":{"job-name":"j1"}}}`
	switch {
	case r.Method == http.MethodGet && name == "":
		fmt.Fprintf(w, `{"kind":"%sList","apiVersion":%q,"metadata":{"resourceVersion":"7"},"items":[%s]}`, kind, api, item)
	case name != "":
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"name":%q,"namespace":"team","uid":"u-2"},"data":{"K":"dg=="}}`, kind, api, name)
	default: // a create
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"name":"made","namespace":"team","uid":"u-3"}}`, kind, api)
	}
}

// kubeCalls makes every call the runtime makes, and returns what came back.
func kubeCalls(ctx context.Context, api kubeAPI) []string {
	var out []string
	note := func(v any, err error) {
		out = append(out, fmt.Sprintf("%#v err=%v notfound=%v", v, err, apierrors.IsNotFound(err)))
	}
	bg := metav1.DeletePropagationBackground
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j1", Labels: map[string]string{layout.LabelRun: "r1"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "img:1", Command: []string{"/bin/sh"}}}}}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}, Data: map[string][]byte{"K": []byte("v")}}
	note(api.Jobs("team").Create(ctx, job, metav1.CreateOptions{}))
	note(api.Jobs("team").Get(ctx, "j1", metav1.GetOptions{}))
	note(api.Jobs("team").Get(ctx, "missing-job", metav1.GetOptions{}))
	note(api.Jobs("team").List(ctx, metav1.ListOptions{Limit: 1}))
	note(api.Jobs("team").List(ctx, metav1.ListOptions{LabelSelector: layout.LabelRun + "=r1"}))
	note(nil, api.Jobs("team").Delete(ctx, "j1", metav1.DeleteOptions{PropagationPolicy: &bg}))
	note(nil, api.Jobs("team").Delete(ctx, "missing-job", metav1.DeleteOptions{PropagationPolicy: &bg}))
	note(api.Pods("team").List(ctx, metav1.ListOptions{LabelSelector: "job-name=j1"}))
	for _, follow := range []bool{true, false} {
		rc, err := api.Pods("team").GetLogs("p1", &corev1.PodLogOptions{Container: "agent", Follow: follow}).Stream(ctx)
		var log []byte
		if err == nil {
			log, err = io.ReadAll(rc)
			rc.Close()
		}
		note(string(log), err)
	}
	note(api.Secrets("team").Create(ctx, secret, metav1.CreateOptions{}))
	note(api.Secrets("team").Update(ctx, secret, metav1.UpdateOptions{}))
	note(api.Secrets("team").Get(ctx, "s1", metav1.GetOptions{}))
	note(nil, api.Secrets("team").Delete(ctx, "s1", metav1.DeleteOptions{}))
	note(api.Namespaces().Get(ctx, "team", metav1.GetOptions{}))
	note(api.Namespaces().Get(ctx, "missing-ns", metav1.GetOptions{}))
	return out
}

// kubeClient, which planagent uses instead of client-go's Clientset (to
// keep every other API group out of the binary), makes the very requests
// the Clientset makes, byte for byte, and reads the answers alike.
func TestKubeClientRequestsAsClientset(t *testing.T) {
	run := func(mk func(*rest.Config) kubeAPI) ([]string, []string) {
		rec := &apiRecorder{}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		cfg := &rest.Config{Host: srv.URL, BearerToken: "tok", QPS: 50, Burst: 100}
		got := kubeCalls(t.Context(), mk(cfg))
		return got, rec.reqs
	}
	wantOut, wantReqs := run(func(cfg *rest.Config) kubeAPI {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return clientsetAPI{cs}
	})
	gotOut, gotReqs := run(func(cfg *rest.Config) kubeAPI {
		c, err := newKubeClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
	if len(wantReqs) != 16 {
		t.Fatalf("the clientset made %d requests, want 16:\n%s", len(wantReqs), strings.Join(wantReqs, "\n"))
	}
	if !reflect.DeepEqual(gotReqs, wantReqs) {
		for i := range max(len(gotReqs), len(wantReqs)) {
			var g, w string
			if i < len(gotReqs) {
				g = gotReqs[i]
			}
			if i < len(wantReqs) {
				w = wantReqs[i]
			}
			if g != w {
				t.Errorf("request %d:\n got %s\nwant %s", i, g, w)
			}
		}
	}
	if !reflect.DeepEqual(gotOut, wantOut) {
		for i := range min(len(gotOut), len(wantOut)) {
			if gotOut[i] != wantOut[i] {
				t.Errorf("answer %d:\n got %s\nwant %s", i, gotOut[i], wantOut[i])
			}
		}
	}
	for _, o := range wantOut {
		if strings.Contains(o, "err=") && !strings.Contains(o, "err=<nil>") && !strings.Contains(o, "notfound=true") {
			t.Errorf("unexpected error from the clientset: %s", o)
		}
	}
	// The body of a create is protobuf, as the Clientset sends it.
	if !strings.Contains(wantReqs[0], `content-type="application/vnd.kubernetes.protobuf"`) {
		t.Errorf("the clientset's create: %s", wantReqs[0])
	}
}

// The pods/exec URL is the one client-go's CoreV1 REST client builds.
func TestKubeClientExecURL(t *testing.T) {
	cfg := &rest.Config{Host: "https://203.0.113.1:6443", BearerToken: "tok"}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newKubeClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, stdin := range []bool{true, false} {
		opts := &corev1.PodExecOptions{Container: "io", Command: []string{"/bin/sh", "-c", "tar xf - -C '/v w'"}, Stdin: stdin, Stdout: true, Stderr: true}
		want := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("team").Name("p1").SubResource("exec").
			VersionedParams(opts, scheme.ParameterCodec).URL()
		if got := c.execURL("team", "p1", opts); got.String() != want.String() {
			t.Errorf("exec URL\n got %s\nwant %s", got, want)
		}
	}
}
