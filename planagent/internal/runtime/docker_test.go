package runtime

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
)

func testOptions(t testing.TB, image, runID string, l volume.Layout, uid, gid int, logs *syncBuffer) DockerOptions {
	if logs == nil {
		logs = &syncBuffer{}
	}
	return DockerOptions{
		Volumes: l, Image: image, RunID: runID,
		Memory: "256m", CPUs: 1, Pids: 128,
		Env: map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_MODEL": "m"},
		UID: uid, GID: gid,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Log:    logs,
	}
}

// testWriter routes the runtime's slog output into the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func startDocker(t *testing.T, opts DockerOptions) *Docker {
	t.Helper()
	d, err := NewDocker(t.Context(), opts)
	if err != nil {
		t.Fatalf("NewDocker: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	return d
}

func TestDockerEngineUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	l := testLayout(t, os.Getuid(), os.Getgid())
	_, err := NewDocker(t.Context(), DockerOptions{Volumes: l, RunID: "r1", Env: map[string]string{"OPENAI_API_KEY": testKey}})
	if !errors.Is(err, ErrEngineUnreachable) {
		t.Fatalf("err = %v, want ErrEngineUnreachable", err)
	}
	for _, want := range []string{"tcp://127.0.0.1:1", "DOCKER_HOST=tcp://127.0.0.1:1", "--runtime local", "contexts are not read"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

func TestDockerImageMissing(t *testing.T) {
	engine(t)
	l := testLayout(t, os.Getuid(), os.Getgid())
	_, err := NewDocker(t.Context(), DockerOptions{Volumes: l, RunID: "r1", Image: "codeagent/no-such-image:never"})
	if !errors.Is(err, ErrImageMissing) {
		t.Fatalf("err = %v, want ErrImageMissing", err)
	}
	for _, want := range []string{"codeagent/no-such-image:never", "make image"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestDockerStartExecStop(t *testing.T) {
	cli := engine(t)
	image := testWatcherImage(t, cli)
	users := []struct {
		name     string
		uid, gid int
	}{{"invoking user", os.Getuid(), os.Getgid()}}
	if os.Getuid() == 0 {
		// Only root can hand the volumes to another uid.
		users = append(users, struct {
			name     string
			uid, gid int
		}{"agent uid 10001", 10001, 10001})
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			l := testLayout(t, u.uid, u.gid)
			runID := testRunID(t, cli)
			logs := &syncBuffer{}
			d := startDocker(t, testOptions(t, image, runID, l, u.uid, u.gid, logs))
			if d.Exited() == nil {
				t.Fatal("Exited() is nil for a container the runtime started")
			}

			execTests := []struct {
				name, command string
				timeout       time.Duration
				wantOut       string
				wantCode      int
			}{
				{"uid", "id -u", time.Minute, strconv.Itoa(u.uid), 0},
				{"workspace is the working dir", "pwd", time.Minute, containerWorkspace, 0},
				{"exit code", "echo failing >&2; exit 3", time.Minute, "failing", 3},
				{"key not in exec env", `echo "key=[$OPENAI_API_KEY]"`, time.Minute, "key=[]", 0},
				{"timeout", "echo started; sleep 30", time.Second, "timed out after 1s", timeoutExitCode},
			}
			for _, tc := range execTests {
				t.Run(tc.name, func(t *testing.T) {
					res, err := d.Exec(t.Context(), tc.command, tc.timeout)
					if err != nil {
						t.Fatalf("Exec(%q): %v", tc.command, err)
					}
					if res.ExitCode != tc.wantCode || !strings.Contains(res.Output, tc.wantOut) {
						t.Fatalf("Exec(%q) = code %d output %q, want code %d output containing %q",
							tc.command, res.ExitCode, res.Output, tc.wantCode, tc.wantOut)
					}
				})
			}

			if res, err := d.Exec(t.Context(), "echo hello > owned.txt", time.Minute); err != nil || res.ExitCode != 0 {
				t.Fatalf("write a file via Exec: %v %+v", err, res)
			}
			info, err := os.Stat(filepath.Join(l.Workspace(), "owned.txt"))
			if err != nil {
				t.Fatalf("file written in the container is not in the host workspace: %v", err)
			}
			if st := info.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid || int(st.Gid) != u.gid {
				t.Errorf("owned.txt belongs to %d:%d on the host, want %d:%d", st.Uid, st.Gid, u.uid, u.gid)
			}

			ids := containersOfRun(t, cli, runID)
			if len(ids) != 1 {
				t.Fatalf("containers of the run = %d, want 1", len(ids))
			}
			assertContainerSpec(t, cli, ids[0], u.uid, u.gid)
			if out := logs.String(); strings.Contains(out, testKey) || !strings.Contains(out, "key=[redacted]") {
				t.Errorf("container logs must show the key masked, got:\n%s", out)
			}

			if err := d.Stop(t.Context()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if ids := containersOfRun(t, cli, runID); len(ids) != 0 {
				t.Errorf("containers left after Stop: %v", ids)
			}
			if err := d.Stop(t.Context()); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			select {
			case err := <-d.Exited():
				t.Errorf("Exited() delivered %v after a requested Stop", err)
			default:
			}
		})
	}
}

// assertContainerSpec checks the isolation settings and that the key is in
// the env only, never in a label.
func assertContainerSpec(t *testing.T, cli *client.Client, id string, uid, gid int) {
	t.Helper()
	in, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := in.Container
	for k, v := range c.Config.Labels {
		if strings.Contains(k+v, testKey) {
			t.Errorf("label %s=%s holds the API key", k, v)
		}
	}
	env := strings.Join(c.Config.Env, "\n")
	if !strings.Contains(env, "OPENAI_API_KEY="+testKey) {
		t.Error("OPENAI_API_KEY is not in the container env")
	}
	if !strings.Contains(env, "OPENAI_BASE_URL=http://host.docker.internal:8080/v1") {
		t.Errorf("base URL not rewritten for the container: %s", env)
	}
	hc := c.HostConfig
	checks := []struct {
		name string
		ok   bool
	}{
		{"user uid:gid", c.Config.User == strconv.Itoa(uid)+":"+strconv.Itoa(gid)},
		{"cap drop ALL", len(hc.CapDrop) == 1 && hc.CapDrop[0] == "ALL"},
		{"no-new-privileges", len(hc.SecurityOpt) == 1 && hc.SecurityOpt[0] == "no-new-privileges"},
		{"not privileged", !hc.Privileged},
		{"memory 256m, no swap", hc.Memory == 256<<20 && hc.MemorySwap == 256<<20},
		{"1 cpu", hc.NanoCPUs == 1e9},
		{"pids 128", hc.PidsLimit != nil && *hc.PidsLimit == 128},
		{"read-only rootfs", hc.ReadonlyRootfs},
		{"host gateway alias", len(hc.ExtraHosts) == 1 && hc.ExtraHosts[0] == "host.docker.internal:host-gateway"},
		{"four bind mounts", len(hc.Mounts) == 4 && hc.Mounts[0].Type == mount.TypeBind},
		{"labels", c.Config.Labels[LabelManaged] == "true"},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("container spec: %s does not hold (%+v)", ch.name, hc.Resources)
		}
	}
}

func TestDockerRemovesLeftovers(t *testing.T) {
	cli := engine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	otherVolumes := testLayout(t, os.Getuid(), os.Getgid())
	crashed := testRunID(t, cli)
	live := testRunID(t, cli)
	create := func(runID string, vols volume.Layout, start bool) string {
		res, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
			Image:  image,
			Config: &container.Config{Labels: map[string]string{LabelManaged: "true", LabelRun: runID, LabelVolumes: vols.Root}},
			HostConfig: &container.HostConfig{Mounts: []mount.Mount{
				{Type: mount.TypeBind, Source: vols.Reports(), Target: containerVolumes + "/reports"},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if start {
			if _, err := cli.ContainerStart(t.Context(), res.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return res.ID
	}
	stoppedSame := create(crashed, l, false)
	runningSame := create(crashed, l, true)
	runningOther := create(live, otherVolumes, true)
	createdOther := create(live, otherVolumes, false)
	goneVolumes := testLayout(t, os.Getuid(), os.Getgid())
	runningGone := create(live, goneVolumes, true)
	if err := os.RemoveAll(goneVolumes.Root); err != nil {
		t.Fatal(err)
	}

	startDocker(t, testOptions(t, image, testRunID(t, cli), l, os.Getuid(), os.Getgid(), nil))

	for _, tc := range []struct {
		name string
		id   string
		kept bool
	}{
		{"stopped container of a crashed run", stoppedSame, false},
		{"running container of a crashed run on the same volumes", runningSame, false},
		{"running container of another run on other volumes", runningOther, true},
		{"just created container of another run on other volumes", createdOther, true},
		{"running container of a run whose volumes dir is gone", runningGone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cli.ContainerInspect(t.Context(), tc.id, client.ContainerInspectOptions{})
			if kept := err == nil; kept != tc.kept {
				t.Errorf("kept = %v, want %v (inspect: %v)", kept, tc.kept, err)
			}
		})
	}
}

// TestDockerExitedOnKill kills the watcher, expects Exited() to say so, and
// starts the runtime again as the orchestrator does after a death.
func TestDockerExitedOnKill(t *testing.T) {
	cli := engine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	d := startDocker(t, testOptions(t, image, runID, l, os.Getuid(), os.Getgid(), nil))

	ids := containersOfRun(t, cli, runID)
	if len(ids) != 1 {
		t.Fatalf("containers of the run = %d, want 1", len(ids))
	}
	if _, err := cli.ContainerKill(t.Context(), ids[0], client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.Exited():
		if err == nil || !strings.Contains(err.Error(), "exited with code 137") {
			t.Fatalf("Exited() = %v, want an exit with code 137", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Exited() delivered nothing within 20s of killing the container")
	}

	// The orchestrator answers Exited() with Start: a fresh container, the dead one gone.
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start after the watcher died: %v", err)
	}
	after := containersOfRun(t, cli, runID)
	if len(after) != 1 || after[0] == ids[0] {
		t.Fatalf("containers of the run after the restart = %v, want one that is not the killed %s", after, shortID(ids[0]))
	}
	if d.Exited() == nil {
		t.Fatal("Exited() is nil after the restart")
	}
	if err := d.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if left := containersOfRun(t, cli, runID); len(left) != 0 {
		t.Errorf("containers left after Stop: %v", left)
	}
}

func TestDockerStartFailsWhenWatcherExits(t *testing.T) {
	cli := engine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, image, runID, l, os.Getuid(), os.Getgid(), nil)
	opts.Env["TEST_EXIT_CODE"] = "3"
	d, err := NewDocker(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	err = d.Start(t.Context())
	if err == nil {
		_ = d.Stop(context.Background())
		t.Fatal("Start succeeded although the watcher exited")
	}
	for _, want := range []string{"exited with code 3", "before its first heartbeat", "failing on purpose with 3", "key=[redacted]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("Start error leaks the API key:\n%v", err)
	}
	if ids := containersOfRun(t, cli, runID); len(ids) != 0 {
		t.Errorf("failed Start left containers: %v", ids)
	}
}

// TestDockerExitedOnOOM fills the container's memory past its limit: Exited()
// must name the out-of-memory kill and the limit, not only an exit code.
func TestDockerExitedOnOOM(t *testing.T) {
	cli := engine(t)
	image := testWatcherImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	opts := testOptions(t, image, testRunID(t, cli), l, os.Getuid(), os.Getgid(), nil)
	opts.Memory = "32m"
	d := startDocker(t, opts)

	if err := os.WriteFile(filepath.Join(l.Workspace(), "oom"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.Exited():
		for _, want := range []string{"out of memory", "limit 32m", "CODEAGENT_CONTAINER_MEMORY"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Exited() = %v, want it to mention %q", err, want)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Exited() delivered nothing within 30s of filling the memory")
	}
}
