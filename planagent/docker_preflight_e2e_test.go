//go:build e2e

package main

import (
	"archive/tar"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The model server answers on the host's 127.0.0.1 only (Ollama's default
// bind): the attempts reach it all the same, through planagent's model
// gateway, which forwards from the host (before the gateway the container
// had to reach the server itself, and planagent refused the run).
func TestE2EDockerModelOnLoopbackOnlyThroughTheGateway(t *testing.T) {
	dockerE2E(t)
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f) // listens on 127.0.0.1
	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if strings.Contains(stderr, "0.0.0.0") {
		t.Errorf("planagent still asks for a server on every interface:\n%s", stderr)
	}
}

// The same with the compose watcher serving the volumes: the probe runs
// inside it, with the environment compose gave it.
func TestE2EDockerComposePreflightModelOnLoopbackOnly(t *testing.T) {
	dockerE2E(t)
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f) // listens on 127.0.0.1 only
	composeUp(t, e, "http://127.0.0.1:"+strconv.Itoa(e.srv.Port())+"/v1")
	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "write greeting files")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	for _, w := range []string{"does not answer from inside the container", "in the compose watcher", "http://host.docker.internal:" + strconv.Itoa(e.srv.Port()) + "/v1", "0.0.0.0"} {
		if !strings.Contains(last, w) {
			t.Errorf("the error line lacks %q:\n%s", w, stderr)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d model requests before the preflight failed", n)
	}
}

// An image without /bin/sh (a distroless or scratch image) cannot run the
// agent's shell commands nor the acceptance commands: planagent must say
// so in one line at start, before the planner's first model call, with
// exit 2 — not after a task has failed with its cause cut off.
func TestE2EDockerImageWithoutShell(t *testing.T) {
	dockerE2E(t)
	const image = "codeagent/noshell:e2e"
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	if err := tw.WriteHeader(&tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	imp := exec.CommandContext(t.Context(), "docker", "import", "-", image)
	imp.Stdin = &tarball
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })

	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newDockerRunEnv(t, f)
	out, stderr, code := e.run("run", "--runtime", "docker", "--image", image, "--yes", "write greeting files")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Errorf("not one line:\n%s", stderr)
	}
	for _, w := range []string{image, "/bin/sh", "use an image with a shell"} {
		if !strings.Contains(lines[len(lines)-1], w) {
			t.Errorf("the error line lacks %q:\n%s", w, stderr)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d model requests before the check failed (the planner ran)", n)
	}
}
