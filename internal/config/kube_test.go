package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The kubernetes keys read from a file reach Config; a bad one is named
// with its line and what is wanted.
func TestLoadKubeKeys(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "codeagent.yaml", `kube_secret: team-llm
kube_node_selector: "disktype=ssd, kubernetes.io/arch=amd64"
kube_tolerations: "gpu=true:NoSchedule,spot:NoExecute"
kube_cpu_request: 0.5
kube_memory_request: 256m
kube_pending_timeout: 90s
`)
	l, err := Load(Options{File: p, Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if l.KubeSecret != "team-llm" || l.KubeCPURequest != 0.5 || l.KubeMemoryRequest != "256m" || l.KubePendingTimeout != 90*time.Second {
		t.Errorf("loaded %q %v %q %v", l.KubeSecret, l.KubeCPURequest, l.KubeMemoryRequest, l.KubePendingTimeout)
	}
	sel, err := ParseNodeSelector(l.KubeNodeSelector)
	if err != nil || !reflect.DeepEqual(sel, map[string]string{"disktype": "ssd", "kubernetes.io/arch": "amd64"}) {
		t.Errorf("node selector %v, %v", sel, err)
	}
	tol, err := ParseTolerations(l.KubeTolerations)
	want := []Toleration{{Key: "gpu", Value: "true", Effect: "NoSchedule"}, {Key: "spot", Effect: "NoExecute"}}
	if err != nil || !reflect.DeepEqual(tol, want) {
		t.Errorf("tolerations %+v, %v", tol, err)
	}

	for _, c := range []struct{ body, key, want string }{
		{"kube_node_selector: disktype\n", "kube_node_selector", "key=value"},
		{"kube_tolerations: gpu=true:Sometimes\n", "kube_tolerations", "NoSchedule, PreferNoSchedule, NoExecute"},
		{"runtime: kubernetes\nkube_cpu_request: 3\n", "kube_cpu_request", "not above container_cpus"},
		{"runtime: kubernetes\nkube_memory_request: 4g\n", "kube_memory_request", "not above container_memory"},
		{"kube_pending_timeout: 0s\n", "kube_pending_timeout", "positive duration"},
	} {
		_, err := Load(Options{File: writeFile(t, dir, "bad.yaml", c.body), Getenv: env(nil)})
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != c.key || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.yaml:") {
			t.Errorf("%q: err = %v, want key %s saying %q at bad.yaml:1", c.body, err, c.key, c.want)
		}
	}
}

// The kubernetes requests bound nothing with another runtime: a docker run
// with container_memory 64m is not refused for the default 128m request.
func TestKubeRequestsOnlyBindKubernetes(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"container_memory: 64m\n", "runtime: local\ncontainer_memory: 64m\ncontainer_cpus: 0.25\n"} {
		if _, err := Load(Options{File: writeFile(t, dir, "small.yaml", body), Getenv: env(nil)}); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
	_, err := Load(Options{File: writeFile(t, dir, "kube.yaml", "runtime: kubernetes\ncontainer_memory: 64m\n"), Getenv: env(nil)})
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "kube_memory_request" {
		t.Errorf("kubernetes with container_memory below the request: %v, want kube_memory_request refused", err)
	}
}
