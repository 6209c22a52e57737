package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/heartbeat"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/runtimetest"
)

const (
	busyboxImage = "codeagent/busybox:local" // scripts/test-images.sh: busybox only
	goImage      = "codeagent/go:local"      // busybox and the host's Go toolchain
)

func testOptions(t testing.TB, image, runID string, l volume.Layout, uid, gid int) Options {
	return Options{
		Volumes: l, Image: image, RunID: runID, Binary: staticCodingAgent(t),
		Memory: "256m", CPUs: 1, Pids: 128,
		Env: map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_MODEL": "m"},
		UID: uid, GID: gid,
		Logger: slog.New(slog.NewTextHandler(runtimetest.LogWriter{T: t}, nil)),
		Log:    &syncBuffer{},
	}
}

func startDocker(t *testing.T, opts Options) *Docker {
	t.Helper()
	d, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.WithoutCancel(t.Context())) })
	return d
}

// e2eEngine is engine for the tests behind `make e2e`: they start real
// containers and are skipped unless CODEAGENT_E2E=1.
func e2eEngine(t testing.TB) *client.Client {
	t.Helper()
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("container test: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	return engine(t)
}

// codingAgent is built at most once for this test binary.
var codingAgent runtimetest.CodingAgentOnce

// staticCodingAgent builds codingagent once per test binary, static as
// `make build` does, for the runtime to bind-mount into any image.
func staticCodingAgent(t testing.TB) string {
	t.Helper()
	return codingAgent.Path(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	codingAgent.Remove()
	os.Exit(code)
}

// testImages builds the busybox-only and Go images when missing.
func testImages(t testing.TB, cli *client.Client) {
	t.Helper()
	for _, img := range []string{busyboxImage, goImage} {
		if _, err := cli.ImageInspect(t.Context(), img); err == nil {
			continue
		}
		script, _ := filepath.Abs(filepath.Join("..", "..", "..", "..", "scripts", "test-images.sh"))
		if out, err := exec.Command(script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return
	}
}

// agentEnv points the agent at srv, which must listen on every interface:
// the runtime rewrites the loopback URL to the host's docker alias.
func agentEnv(srv *llmtest.Server) map[string]string {
	return map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "test-model"}
}

// waitGone waits until no container of runID is left.
func waitGone(t *testing.T, cli *client.Client, runID string) {
	t.Helper()
	poll.Until(t, 30*time.Second, "no container of run "+runID+" left",
		func() bool { return len(containersOfRun(t, cli, runID)) == 0 })
}

// TestDockerAttemptInBusyboxImage runs an attempt in an image that has
// nothing but busybox: the agent is the bind-mounted binary, works in the
// attempt's copy as the operator with HOME set, reaches the model, reports,
// and its container is gone afterwards.
func TestDockerAttemptInBusyboxImage(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	srv := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	srv.Handle(runtimetest.ShellModel(`echo "uid=$(id -u) home=$HOME pwd=$(pwd)" && echo made > made.txt && ls /codeagent/volumes`))
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, busyboxImage, runID, l, os.Getuid(), os.Getgid())
	opts.Env = agentEnv(srv)
	d := startDocker(t, opts)
	a := runtimetest.NewAttempt(t, l, runID, "t1")
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	rep := runtimetest.WaitReport(t, l, "t1")
	if rep.Status != protocol.StatusCompleted {
		t.Fatalf("report: %s %s", rep.Status, rep.Error)
	}
	want := "uid=" + strconv.Itoa(os.Getuid()) + " home=/tmp pwd=" + layout.VolumesDir + "/attempts/" + runID + "/t1.1"
	if !strings.Contains(rep.Body, want) {
		t.Errorf("the agent's shell said %q, want %q", rep.Body, want)
	}
	// The container sees its copy and the volumes it needs, not the rest.
	if strings.Contains(rep.Body, "workspace") || strings.Contains(rep.Body, "runs") {
		t.Errorf("the container sees more of the volumes than it needs: %q", rep.Body)
	}
	if got, err := os.ReadFile(filepath.Join(a.Dir, "made.txt")); err != nil || string(got) != "made\n" {
		t.Errorf("the agent's file is not in the copy on the host: %q, %v", got, err)
	}
	waitGone(t, cli, runID)
	select {
	case ex := <-d.Exited():
		t.Errorf("an attempt that reported was said to have died: %+v", ex)
	default:
	}
	if r := srv.Rejections(); len(r) > 0 {
		t.Errorf("the model server rejected requests: %v", r)
	}
}

// TestDockerParallelAttempts launches two attempts: each gets its own
// container, both run at once, labelled with the run, task and attempt.
func TestDockerParallelAttempts(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	srv := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	release := make(chan struct{})
	var once sync.Once
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		<-release // hold both agents until the test has seen their containers
		return runtimetest.ShellModel("hostname")(req)
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, busyboxImage, runID, l, os.Getuid(), os.Getgid())
	opts.Env = agentEnv(srv)
	d := startDocker(t, opts)
	for _, id := range []string{"t1", "t2"} {
		if err := d.Launch(t.Context(), runtimetest.NewAttempt(t, l, runID, id)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", layout.LabelRun+"="+runID).Add("label", layout.LabelRole+"=attempt")})
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]string{}
	for _, c := range list.Items {
		if c.State != container.StateRunning || c.Labels[layout.LabelAttempt] != "1" || c.Labels[layout.LabelVolumes] != l.Root || c.Labels[layout.LabelManaged] != "true" {
			t.Errorf("container %s: state %s labels %v", shortID(c.ID), c.State, c.Labels)
		}
		tasks[c.Labels[layout.LabelTask]] = c.ID
	}
	if len(tasks) != 2 || tasks["t1"] == "" || tasks["t2"] == "" || tasks["t1"] == tasks["t2"] {
		t.Fatalf("running attempt containers by task: %v, want one each for t1 and t2", tasks)
	}
	once.Do(func() { close(release) })
	for _, id := range []string{"t1", "t2"} {
		rep := runtimetest.WaitReport(t, l, id)
		if rep.Status != protocol.StatusCompleted || !strings.Contains(rep.Body, shortID(tasks[id])) {
			t.Errorf("%s: %s %q, want completed in its own container %s", id, rep.Status, rep.Body, shortID(tasks[id]))
		}
	}
	waitGone(t, cli, runID)
}

// TestDockerExecGoToolchain runs acceptance commands in a fresh container
// of an image with a Go toolchain and no codingagent: `go test` in the
// given dir passes and fails with its exit code, a timeout is 124, and
// no container stays.
func TestDockerExecGoToolchain(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, goImage, runID, l, os.Getuid(), os.Getgid())
	opts.Memory, opts.CPUs = "", 0 // the compiler needs more than an agent
	d := startDocker(t, opts)
	dir := l.Attempt(runID, "t1", 1) + ".accept"
	files := map[string]string{
		"go.mod":      "module example.com/sum\n\ngo 1.22\n",
		"sum.go":      "package sum\n\nfunc Sum(a, b int) int { return a + b }\n",
		"sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"wrong sum\")\n\t}\n}\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.Exec(t.Context(), dir, "go test ./...", 3*time.Minute)
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Output, "ok") || !strings.Contains(res.Output, "example.com/sum") {
		t.Fatalf("go test = %+v, %v; want it to pass", res, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sum.go"), []byte("package sum\n\nfunc Sum(a, b int) int { return a - b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = d.Exec(t.Context(), dir, "go test ./...", 3*time.Minute)
	if err != nil || res.ExitCode != 1 || !strings.Contains(res.Output, "wrong sum") {
		t.Fatalf("failing go test = %+v, %v; want exit code 1 naming the failure", res, err)
	}
	res, err = d.Exec(t.Context(), dir, "sleep 30", time.Second)
	if err != nil || res.ExitCode != layout.TimeoutExitCode || !strings.Contains(res.Output, "timed out after 1s") {
		t.Fatalf("timed-out command = %+v, %v", res, err)
	}
	waitGone(t, cli, runID)
}

// TestDockerGitInAttemptContainer: in the default image (it has git) the
// agent's `git status` and `git diff` work in its copy, a self-contained
// clone owned by the operator.
func TestDockerGitInAttemptContainer(t *testing.T) {
	cli := e2eEngine(t)
	if _, err := cli.ImageInspect(t.Context(), layout.DefaultImage); err != nil {
		t.Fatalf("this test needs %s (make image): %v", layout.DefaultImage, err)
	}
	srv := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	srv.Handle(runtimetest.ShellModel("echo changed >> a.txt && git status --short && git diff --stat"))
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, layout.DefaultImage, runID, l, os.Getuid(), os.Getgid())
	opts.Env = agentEnv(srv)
	d := startDocker(t, opts)
	a := runtimetest.NewAttempt(t, l, runID, "t1")
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = a.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "a.txt")
	git("commit", "-qm", "one")
	if err := d.Launch(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	rep := runtimetest.WaitReport(t, l, "t1")
	if rep.Status != protocol.StatusCompleted || !strings.Contains(rep.Body, " M a.txt") || !strings.Contains(rep.Body, "1 file changed") {
		t.Fatalf("git in the attempt's container: %s %q", rep.Status, rep.Body)
	}
	waitGone(t, cli, runID)
}

// TestDockerAttemptDies: an attempt's container killed from outside, or
// OOM-killed, is an Exit for that task naming the cause, and is removed.
func TestDockerAttemptDies(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	for _, tc := range []struct {
		name   string
		memory string
		kill   bool
		want   []string
	}{
		{name: "killed", kill: true, want: []string{"exited with code 137"}},
		// The model answers 96 MiB: the agent holding it passes the limit.
		{name: "out of memory", memory: "48m", want: []string{"out of memory", "limit 48m", "CODEAGENT_CONTAINER_MEMORY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey), llmtest.WithChunkSize(1<<20))
			huge := strings.Repeat("x", 96<<20)
			srv.Handle(func(llmtest.Request) llmtest.Reply {
				if tc.kill {
					return llmtest.Reply{Content: "late", Delay: time.Minute}
				}
				return llmtest.Text(huge)
			})
			l := testLayout(t, os.Getuid(), os.Getgid())
			runID := testRunID(t, cli)
			opts := testOptions(t, busyboxImage, runID, l, os.Getuid(), os.Getgid())
			opts.Env = agentEnv(srv)
			if tc.memory != "" {
				opts.Memory = tc.memory
			}
			d := startDocker(t, opts)
			if err := d.Launch(t.Context(), runtimetest.NewAttempt(t, l, runID, "t1")); err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				waitFor(t, "the agent's heartbeat", func() bool { return heartbeat.Alive(l.Watchers(), time.Minute) })
				for _, id := range containersOfRun(t, cli, runID) {
					if _, err := cli.ContainerKill(t.Context(), id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			select {
			case ex := <-d.Exited():
				if ex.TaskID != "t1" {
					t.Errorf("Exit for task %q, want t1", ex.TaskID)
				}
				for _, want := range tc.want {
					if ex.Err == nil || !strings.Contains(ex.Err.Error(), want) {
						t.Errorf("Exit error %v does not mention %q", ex.Err, want)
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no Exit within 30s")
			}
			waitGone(t, cli, runID)
		})
	}
}

// TestDockerStopOnCancel is Ctrl-C: the orchestrator's run context is
// cancelled and it calls Stop with a context that is not (a cancelled one
// is the second Ctrl-C, which cuts the grace short): the running attempt
// stops (its agent reports it interrupted) and its container is removed.
func TestDockerStopOnCancel(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	srv := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "late", Delay: time.Minute} })
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, busyboxImage, runID, l, os.Getuid(), os.Getgid())
	opts.Env = agentEnv(srv)
	d := startDocker(t, opts)
	if err := d.Launch(t.Context(), runtimetest.NewAttempt(t, l, runID, "t1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent's first model call", func() bool { return len(srv.Requests()) > 0 })
	if err := d.Stop(context.WithoutCancel(t.Context())); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if ids := containersOfRun(t, cli, runID); len(ids) != 0 {
		t.Errorf("containers left after Stop: %v", ids)
	}
	if rep, err := protocol.ReadReport(l.ReportFile("t1")); err != nil || rep.Status != protocol.StatusInterrupted {
		t.Errorf("report after Stop: %+v, %v; want interrupted", rep, err)
	}
	select {
	case ex := <-d.Exited():
		t.Errorf("Stop reported the attempt as died: %+v", ex)
	default:
	}
}

// TestDockerRemovesLeftovers: the containers of a run that crashed (never
// stopped) on these volumes are removed by the next run's Start; another
// run's live container on other volumes stays.
func TestDockerRemovesLeftovers(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	srv := llmtest.New(t, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(testKey))
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "late", Delay: time.Minute} })
	l := testLayout(t, os.Getuid(), os.Getgid())
	crashed := testRunID(t, cli)
	opts := testOptions(t, busyboxImage, crashed, l, os.Getuid(), os.Getgid())
	opts.Env = agentEnv(srv)
	d, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(t.Context(), runtimetest.NewAttempt(t, l, crashed, "t1")); err != nil {
		t.Fatal(err)
	}
	_ = d.Close() // the crash: no Stop
	left := containersOfRun(t, cli, crashed)
	if len(left) != 1 {
		t.Fatalf("the crashed run has %d containers, want 1", len(left))
	}
	other := testLayout(t, os.Getuid(), os.Getgid())
	live := testRunID(t, cli)
	res, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
		Image: busyboxImage,
		Config: &container.Config{Cmd: []string{"sleep", "60"},
			Labels: map[string]string{layout.LabelManaged: "true", layout.LabelRun: live, layout.LabelVolumes: other.Root}},
		HostConfig: &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeBind, Source: other.Reports(), Target: "/reports"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(t.Context(), res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}

	startDocker(t, testOptions(t, busyboxImage, testRunID(t, cli), l, os.Getuid(), os.Getgid()))
	if _, err := cli.ContainerInspect(t.Context(), left[0], client.ContainerInspectOptions{}); err == nil {
		t.Error("the crashed run's attempt container is still there after the next Start")
	}
	if _, err := cli.ContainerInspect(t.Context(), res.ID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("another run's live container was removed: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
}

func TestDockerEngineUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	l := testLayout(t, os.Getuid(), os.Getgid())
	_, err := New(t.Context(), Options{Volumes: l, RunID: "r1", Env: map[string]string{"OPENAI_API_KEY": testKey}})
	if !errors.Is(err, ErrEngineUnreachable) {
		t.Fatalf("err = %v, want ErrEngineUnreachable", err)
	}
	for _, want := range []string{"tcp://127.0.0.1:1", "DOCKER_HOST=tcp://127.0.0.1:1", "--runtime local"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

func TestDockerImageMissing(t *testing.T) {
	e2eEngine(t)
	l := testLayout(t, os.Getuid(), os.Getgid())
	for image, want := range map[string]string{
		"codeagent/no-such-image:never":  "planagent never pulls",
		layout.DefaultImage + "-missing": "not found",
	} {
		_, err := New(t.Context(), Options{Volumes: l, RunID: "r1", Binary: staticCodingAgent(t), Image: image})
		if !errors.Is(err, ErrImageMissing) || !strings.Contains(err.Error(), image) || !strings.Contains(err.Error(), want) {
			t.Errorf("image %s: err = %v, want ErrImageMissing naming it and %q", image, err, want)
		}
	}
}

// TestDockerExecClosedEgress: on the real engine, an acceptance command
// under closed egress (no network; codingagent relay as the container's
// first process, mounted into an image without it) reaches an allowed
// name through the egress proxy, is refused another with the refusal
// heard under the copy's task and attempt, keeps its exit code, and is
// still killed at its timeout.
func TestDockerExecClosedEgress(t *testing.T) {
	cli := e2eEngine(t)
	testImages(t, cli)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ALLOWED-BODY") }))
	defer backend.Close()
	port := backend.Listener.Addr().(*net.TCPAddr).Port
	l := testLayout(t, os.Getuid(), os.Getgid())
	runID := testRunID(t, cli)
	opts := testOptions(t, busyboxImage, runID, l, os.Getuid(), os.Getgid())
	pol, err := egress.Parse([]string{"allowed.test"}, []string{"allowed.test=127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []string
	opts.Egress = pol
	opts.EgressRefused = func(task string, n int, r egress.Refusal) {
		mu.Lock()
		heard = append(heard, fmt.Sprintf("%s.%d %s:%d", task, n, r.Host, r.Port))
		mu.Unlock()
	}
	d := startDocker(t, opts)
	dir := l.Attempt(runID, "t1", 2) + volume.AcceptSuffix
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := d.Exec(t.Context(), dir, fmt.Sprintf("wget -q -O- http://allowed.test:%d/ && echo && wget -q -O- http://denied.test:%d/; echo denied-exit=$?; exit 3", port, port), time.Minute)
	if err != nil || res.ExitCode != 3 || !strings.Contains(res.Output, "ALLOWED-BODY") || !strings.Contains(res.Output, "denied-exit=1") {
		t.Fatalf("Exec = %+v, %v; want exit 3, the allowed body and wget's refusal (1)", res, err)
	}
	mu.Lock()
	if want := fmt.Sprintf("t1.2 denied.test:%d", port); len(heard) != 1 || heard[0] != want {
		t.Errorf("refusals heard %q, want %q", heard, want)
	}
	mu.Unlock()
	res, err = d.Exec(t.Context(), dir, "sleep 30", time.Second)
	if err != nil || res.ExitCode != layout.TimeoutExitCode || !strings.Contains(res.Output, "timed out after 1s") {
		t.Fatalf("timed-out command = %+v, %v", res, err)
	}
	waitGone(t, cli, runID)
}
