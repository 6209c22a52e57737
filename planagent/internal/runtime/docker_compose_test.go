package runtime

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// TestDockerReusesComposeWatcher starts a container the way `docker compose
// up` does (service label, the volumes bind-mounted) and checks that Start
// reuses it instead of creating one, and that Stop leaves it running.
func TestDockerReusesComposeWatcher(t *testing.T) {
	cli := engine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)

	var mounts []mount.Mount
	for _, name := range []string{"context", "commands", "reports", "workspace"} {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: l.Root + "/" + name, Target: containerVolumes + "/" + name})
	}
	compose, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
		Image: image,
		Config: &container.Config{Labels: map[string]string{
			composeService: "codingagent", "com.docker.compose.project": "codeagent-test",
			// Only for the test's cleanup: compose does not set it.
			LabelRun: runID,
		}},
		HostConfig: &container.HostConfig{Mounts: mounts},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), compose.ID, client.ContainerRemoveOptions{Force: true})
	})
	since := time.Now()
	if _, err := cli.ContainerStart(t.Context(), compose.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForHeartbeat(t, l.Watchers(), since)

	d := startDocker(t, testOptions(t, image, "reuse-"+runID, l, os.Getuid(), os.Getgid(), nil))
	if d.Exited() != nil {
		t.Error("Exited() must be nil when serving through a compose watcher")
	}
	if ids := containersOfRun(t, cli, "reuse-"+runID); len(ids) != 0 {
		t.Errorf("Start created containers %v although compose serves the volumes", ids)
	}
	res, err := d.Exec(t.Context(), "hostname", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Output); got != shortID(compose.ID) {
		t.Errorf("Exec ran in %q, want the compose container %s", got, shortID(compose.ID))
	}
	if err := d.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	in, err := cli.ContainerInspect(t.Context(), compose.ID, client.ContainerInspectOptions{})
	if err != nil || !in.Container.State.Running {
		t.Errorf("Stop must leave the compose watcher running: %v", err)
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
		if _, ok := freshHeartbeat(dir, since); ok {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("no heartbeat in %s within 20s", dir)
		case <-tick.C:
		}
	}
}
