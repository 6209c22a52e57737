//go:build e2e

package main

import (
	"github.com/moby/moby/client"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// goImage is busybox plus this machine's Go toolchain and nothing of
// codingagent (scripts/test-images.sh).
const goImage = "codeagent/go:local"

// busyboxImage holds busybox and nothing else: no codingagent, no git.
const busyboxImage = "codeagent/busybox:local"

// ensureTestImages builds the test images (scripts/test-images.sh) when
// one is missing.
func ensureTestImages(t *testing.T, cli *client.Client) {
	t.Helper()
	for _, img := range []string{goImage, busyboxImage} {
		if _, err := cli.ImageInspect(t.Context(), img); err != nil {
			if out, err := exec.Command(filepath.Join("..", "scripts", "test-images.sh")).CombinedOutput(); err != nil {
				t.Fatalf("scripts/test-images.sh: %v\n%s", err, out)
			}
			return
		}
	}
}

// TestE2EDockerAnyImage runs a goal with --image set to an image that has a
// Go toolchain but no codingagent: the task's container runs the
// bind-mounted agent, whose shell has `go`, and the acceptance command
// `go test ./...` passes in a fresh container of the same image. One
// container per attempt and one per acceptance command, all removed.
func TestE2EDockerAnyImage(t *testing.T) {
	cli := dockerE2E(t)
	ensureTestImages(t, cli)
	plan := `{"title":"Sum","overview":"A Go package.","tasks":[
 {"id":"sum","title":"Write sum","description":"TOKEN-SUM: write a Go package sum with a test","dependencies":[],"acceptance":["go test ./..."]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-SUM", steps: []llmtest.ToolCall{
		llmtest.Call("write_file", map[string]any{"path": "go.mod", "content": "module example.com/sum\n\ngo 1.22\n"}),
		llmtest.Call("write_file", map[string]any{"path": "sum.go", "content": "package sum\n\nfunc Sum(a, b int) int { return a + b }\n"}),
		llmtest.Call("write_file", map[string]any{"path": "sum_test.go", "content": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n"}),
		llmtest.Call("shell_exec", map[string]any{"command": "go vet ./... && go version > toolchain.txt"}),
	}}}}
	e := newDockerRunEnv(t, f)
	volumes := layout.LabelVolumes + "=" + e.volumes
	attempts := watchContainers(t, cli, volumes, layout.LabelRole+"=attempt")
	execs := watchContainers(t, cli, volumes, layout.LabelRole+"=exec")

	out, stderr, code := e.run("run", "--runtime", "docker", "--image", goImage, "--yes", "--json", "add a sum package")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if got := e.read("workspace/toolchain.txt"); !strings.HasPrefix(got, "go version go1.") {
		t.Errorf("the agent's shell in the task's container ran %q, want the image's go", got)
	}
	if rep := e.read("reports/sum.md"); !strings.Contains(rep, "status: completed") {
		t.Errorf("report:\n%s", rep)
	}
	if n := len(attempts.settled(t)); n != 1 {
		t.Errorf("%d attempt containers, want 1", n)
	}
	if n := len(execs.settled(t)); n != 1 {
		t.Errorf("%d acceptance containers, want 1 (go test ./...)", n)
	}
	runID, _ := e.runState()
	assertNoContainers(t, cli, layout.LabelRun+"="+runID)
	assertNoContainers(t, cli, volumes)
}
