//go:build e2e

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// TestE2EDockerTwoRunsShareTheEngine: two planagents on one engine, the
// second started while the first is in its task. The second's start
// leaves every container of the first alone, including an exited one (an
// acceptance command whose output the first has yet to read, made here by
// a scripted docker create, as the engine shows it for a moment in a real
// run), and a dead run's container on the first's volumes dir (that dir's
// next run judges it); it removes a dead run's container on its own
// volumes. Both runs then complete.
func TestE2EDockerTwoRunsShareTheEngine(t *testing.T) {
	cli := dockerE2E(t)
	ensureTestImages(t, cli)
	f := &fakeModel{started: make(chan string, 4), tasks: []scriptTask{
		// A's task waits for B's to end: A is live through all of B's run.
		{token: "TOKEN-A", after: "TOKEN-B", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a"})}},
		{token: "TOKEN-B", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "b.txt", "content": "b"})}},
	}}
	e := newDockerRunEnv(t, f)
	workspace := func(name string) string {
		ws := filepath.Join(e.dir, name)
		writeFile(t, ws, "notes.txt", "one\n")
		gitIn(t, ws, "init", "-q", "-b", "main")
		gitIn(t, ws, "add", "-A")
		gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "the user's commit")
		return ws
	}
	planFile := func(token, file string) string {
		writeFile(t, e.dir, token+".json", `{"title":"`+token+`","overview":"x","tasks":[{"id":"t","title":"Write","description":"`+token+
			`: write a file","dependencies":[],"acceptance":["test -f `+file+`"]}]}`)
		return filepath.Join(e.dir, token+".json")
	}
	volumesB := filepath.Join(e.dir, "volumes-b")
	t.Cleanup(func() {
		assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes)
		assertNoContainers(t, cli, layout.LabelVolumes+"="+volumesB)
	})

	a := e.command("run", "--runtime", "docker", "--image", busyboxImage, "--workspace", workspace("ws-a"), "--plan", planFile("TOKEN-A", "a.txt"), "--yes")
	var aOut, aErr strings.Builder
	a.Stdout, a.Stderr = &aOut, &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill() })
	select {
	case tok := <-f.started:
		if tok != "TOKEN-A" {
			t.Fatalf("started %s first", tok)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("run A's task never started:\n%s", aErr.String())
	}
	runA, _ := e.runState()

	// What the engine holds beside A's own: an exited container of A, a
	// dead run's on A's volumes and a dead run's on B's.
	exited := func(run, volumes string) string {
		t.Helper()
		ctx := context.WithoutCancel(t.Context())
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Image: busyboxImage,
			Config: &container.Config{Cmd: []string{"true"}, Labels: map[string]string{layout.LabelManaged: "true",
				layout.LabelRun: run, layout.LabelVolumes: volumes, layout.LabelRole: "exec"}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
		wait := cli.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wait.Result:
		case err := <-wait.Error:
			t.Fatal(err)
		}
		return res.ID
	}
	ofA := exited(runA, e.volumes)
	deadOnA := exited("run-20260101-000000-dead", e.volumes)
	if err := os.MkdirAll(volumesB, 0o755); err != nil {
		t.Fatal(err)
	}
	deadOnB := exited("run-20260101-000000-dead", volumesB)

	b := e.command("run", "--runtime", "docker", "--image", busyboxImage, "--workspace", workspace("ws-b"), "--plan", planFile("TOKEN-B", "b.txt"), "--yes")
	b.Env = append(b.Env, "CODEAGENT_VOLUMES_DIR="+volumesB)
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("run B: %v\n%s", err, out)
	}
	there := func(id string) bool {
		_, err := cli.ContainerInspect(context.WithoutCancel(t.Context()), id, client.ContainerInspectOptions{})
		return err == nil
	}
	if !there(ofA) {
		t.Error("run B's start removed run A's exited container while A was live")
	}
	if !there(deadOnA) {
		t.Error("run B's start removed a container of another volumes dir that exists")
	}
	if there(deadOnB) {
		t.Error("run B's start left a dead run's container on its own volumes")
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("run A: %v\nstdout:\n%s\nstderr:\n%s", err, aOut.String(), aErr.String())
	}
	if !strings.Contains(aOut.String(), "| t | completed |") {
		t.Errorf("run A's summary:\n%s", aOut.String())
	}
}
