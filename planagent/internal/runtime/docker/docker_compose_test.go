package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/refusals"
	"github.com/codeagent/codeagent/planagent/internal/runtime/heartbeat"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// TestDockerReusesComposeWatcher starts a container the way `docker compose
// up` does (service label, the volumes bind-mounted) and checks that the
// runtime serves through it: Launch starts no container of its own, and
// Stop leaves it running.
func TestDockerReusesComposeWatcher(t *testing.T) {
	cli := e2eEngine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)

	composeID := startComposeLike(t, cli, image, l, runID)

	d := startDocker(t, testOptions(t, image, "reuse-"+runID, l, os.Getuid(), os.Getgid()))
	if d.Exited() != nil {
		t.Error("Exited() must be nil when serving through a compose watcher")
	}
	if ids := containersOfRun(t, cli, "reuse-"+runID); len(ids) != 0 {
		t.Errorf("Start created containers %v although compose serves the volumes", ids)
	}
	if err := d.Launch(t.Context(), Attempt{RunID: "reuse-" + runID, TaskID: "t1", Attempt: 1, Dir: l.Workspace()}); err != nil {
		t.Fatal(err)
	}
	if ids := containersOfRun(t, cli, "reuse-"+runID); len(ids) != 0 {
		t.Errorf("Launch created containers %v although compose serves the volumes", ids)
	}
	if err := d.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	in, err := cli.ContainerInspect(t.Context(), composeID, client.ContainerInspectOptions{})
	if err != nil || !in.Container.State.Running {
		t.Errorf("Stop must leave the compose watcher running: %v", err)
	}
}

// TestDockerComposeRefusalsFile: with the compose watcher reused, what the
// compose gateway appends to volumes/egress/refusals.jsonl reaches
// EgressRefused under the attempt its client names, once the run catches
// up (as the task's result does) or at Stop; what was there before Start,
// and a client naming an attempt the run did not launch, are not a task's.
func TestDockerComposeRefusalsFile(t *testing.T) {
	cli := e2eEngine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	startComposeLike(t, cli, image, l, runID)

	if err := os.MkdirAll(filepath.Dir(l.EgressRefusals()), 0o755); err != nil {
		t.Fatal(err)
	}
	gw, err := refusals.Create(l.EgressRefusals(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	refuse := func(client, host string) {
		gw.Add(egress.Refusal{Method: "CONNECT", Host: host, Port: 443, Reason: "not in the egress allow-list", Client: client})
	}
	refuse("t1.1", "before.example") // an earlier run's

	var mu sync.Mutex
	var got []string
	opts := testOptions(t, image, "refusals-"+runID, l, os.Getuid(), os.Getgid())
	opts.EgressRefused = func(task string, n int, r egress.Refusal) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s/%d/%s", task, n, r.Host))
	}
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(got, ",")
	}
	d := startDocker(t, opts)
	if err := d.Launch(t.Context(), Attempt{RunID: "refusals-" + runID, TaskID: "t1", Attempt: 1, Dir: l.Workspace()}); err != nil {
		t.Fatal(err)
	}
	refuse("t1.1", "denied.example")
	refuse("", "watcher.example")
	refuse("ghost.7", "framed.example")
	d.CatchUpRefusals()
	if want := "t1/1/denied.example,/0/watcher.example,/0/framed.example"; seen() != want {
		t.Errorf("after catching up: %q, want %q", seen(), want)
	}
	refuse("t1.1", "late.example")
	if err := d.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := "t1/1/denied.example,/0/watcher.example,/0/framed.example,t1/1/late.example"; seen() != want {
		t.Errorf("after Stop: %q, want %q (its last read)", seen(), want)
	}
}

// waitForHeartbeat waits, with a deadline, for a heartbeat newer than since.
func waitForHeartbeat(t *testing.T, dir string, since time.Time) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if heartbeat.Since(dir, since) {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("no heartbeat in %s within 20s", dir)
		case <-tick.C:
		}
	}
}

// startComposeLike starts a container the way `docker compose up` does: the
// service label and the four volume dirs of l bind-mounted. It returns once
// the container's heartbeat is seen.
func startComposeLike(t *testing.T, cli *client.Client, image string, l volume.Layout, runID string) string {
	t.Helper()
	var mounts []mount.Mount
	for _, name := range []string{"context", "commands", "reports", "workspace"} {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: l.Root + "/" + name, Target: composeVolumes + "/" + name})
	}
	compose, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
		Image: image,
		Config: &container.Config{Labels: map[string]string{
			composeService: "codingagent", "com.docker.compose.project": "codeagent-test",
			// Only for the test's cleanup: compose does not set it.
			layout.LabelRun: runID,
		}},
		HostConfig: &container.HostConfig{Mounts: mounts},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.WithoutCancel(t.Context()), compose.ID, client.ContainerRemoveOptions{Force: true})
	})
	since := time.Now()
	if _, err := cli.ContainerStart(t.Context(), compose.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForHeartbeat(t, l.Watchers(), since)
	return compose.ID
}

// TestDockerComposeWatcherOtherWorkspace: with compose serving the volumes
// and its own ./volumes/workspace, `planagent --workspace DIR` must stop with
// a clear error before creating anything, since the compose watcher would
// claim the commands and work in the wrong tree.
func TestDockerComposeWatcherOtherWorkspace(t *testing.T) {
	cli := e2eEngine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	startComposeLike(t, cli, image, l, runID)

	other, err := volume.New(l.Root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(t.Context(), testOptions(t, image, "other-"+runID, other, os.Getuid(), os.Getgid()))
	if !errors.Is(err, ErrWorkspaceMismatch) {
		t.Fatalf("New = %v, want ErrWorkspaceMismatch", err)
	}
	for _, want := range []string{l.Workspace(), other.Workspace(), "docker compose down", "--workspace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if ids := containersOfRun(t, cli, "other-"+runID); len(ids) != 0 {
		t.Errorf("containers created despite the error: %v", ids)
	}
}
