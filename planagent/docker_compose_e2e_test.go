package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime"
)

// TestE2EDockerComposeWatcher brings up the repository's docker-compose.yml
// in a temp project, then runs planagent with the docker runtime: it must
// find the compose watcher by its heartbeat and serve the run through it
// (no container of its own), and `docker-compose down` ends it cleanly.
func TestE2EDockerComposeWatcher(t *testing.T) {
	cli := dockerE2E(t)
	// Each task's shell says last where it ran.
	tasks := threeTasks()
	for i := range tasks {
		tasks[i].steps = append(tasks[i].steps, llmtest.Call("shell_exec", map[string]any{"command": "pwd # where-" + tasks[i].token}))
	}
	f := &fakeModel{plan: threeTaskPlan, tasks: tasks}
	e := newDockerRunEnv(t, f)

	watch := watchContainers(t, cli, runtime.LabelVolumes+"="+e.volumes)
	// The quick start's loopback URL, which the compose file makes reach
	// the host from inside (CODEAGENT_LOOPBACK_HOST).
	composeDown := composeUp(t, e, "http://127.0.0.1:"+strconv.Itoa(e.srv.Port())+"/v1")

	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "--json", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "using the compose codingagent watcher") {
		t.Errorf("the run did not say it uses the compose watcher; stderr:\n%s", stderr)
	}
	e.assertThreeTasksDone()
	e.assertOwnedAndKeyFree()
	if created := watch.settled(t); len(created) != 0 {
		t.Errorf("planagent created containers %v although the compose watcher serves the volumes", created)
	}
	runID, _ := e.runState()
	assertNoContainers(t, cli, runtime.LabelRun+"="+runID)
	// The watcher worked on each task in the task's own copy, not in the
	// workspace it was started with.
	for id, tok := range map[string]string{"alpha": "TOKEN-ALPHA", "beta": "TOKEN-BETA", "gamma": "TOKEN-GAMMA"} {
		pwd, _, _ := strings.Cut(e.toolResult("where-"+tok), "\n")
		if want := "/volumes/attempts/" + runID + "/" + id + ".1"; !strings.HasSuffix(pwd, want) {
			t.Errorf("%s's shell ran in %q, want its copy ...%s", id, pwd, want)
		}
	}

	project := composeDown()
	assertNoContainers(t, cli, "com.docker.compose.project="+project)
}

// composeUp brings up the repository's docker-compose.yml codingagent
// service over e's volumes, with baseURL as compose's OPENAI_BASE_URL, and
// waits for its heartbeat. The returned func brings it down (also done at
// cleanup) and returns the project name.
func composeUp(t *testing.T, e *runEnv, baseURL string) func() string {
	t.Helper()
	compose := composeCommand(t)
	spec, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatalf("read the repository's compose file: %v", err)
	}
	file := filepath.Join(e.dir, "docker-compose.yml")
	if err := os.WriteFile(file, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	// Bind sources that do not exist are created by the engine, as root.
	for _, d := range []string{"context", "commands", "reports/.watchers", "workspace", "attempts"} {
		if err := os.MkdirAll(filepath.Join(e.volumes, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	project := fmt.Sprintf("cae2e%d", time.Now().UnixNano())
	composeDo := func(ctx context.Context, args ...string) error {
		full := append(append([]string{}, compose[1:]...),
			append([]string{"-p", project, "-f", file, "--project-directory", e.dir}, args...)...)
		cmd := exec.CommandContext(ctx, compose[0], full...)
		cmd.Dir = e.dir
		// The watcher's settings come from compose's environment, not from planagent.
		cmd.Env = append(os.Environ(), "IMAGE="+e2eImage(),
			"UID="+strconv.Itoa(os.Getuid()), "GID="+strconv.Itoa(os.Getgid()),
			"OPENAI_API_KEY="+e2eKey, "OPENAI_MODEL=test-model",
			"OPENAI_BASE_URL="+baseURL)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w\n%s", compose[0], strings.Join(full, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		if err := composeDo(context.WithoutCancel(t.Context()), "down", "-t", "5"); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	since := time.Now()
	if err := composeDo(t.Context(), "up", "-d", "codingagent"); err != nil {
		t.Fatal(err)
	}
	waitFreshHeartbeat(t, filepath.Join(e.volumes, "reports", ".watchers"), since)
	return func() string {
		if err := composeDo(t.Context(), "down", "-t", "5"); err != nil {
			t.Fatal(err)
		}
		return project
	}
}

// composeCommand is `docker compose` (v2 plugin) or `docker-compose` (v1).
func composeCommand(t *testing.T) []string {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	t.Fatal("CODEAGENT_E2E=1 needs `docker compose` or docker-compose (v1.28+) to test docker-compose.yml")
	return nil
}

// waitFreshHeartbeat waits, with a deadline, for a watcher heartbeat
// written at or after since (protocol.Heartbeat's judgement, as planagent's).
func waitFreshHeartbeat(t *testing.T, dir string, since time.Time) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if h, ok := protocol.LatestHeartbeat(dir); ok && h.BeatSince(since) {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("no watcher heartbeat in %s within 30s of `up`", dir)
		case <-tick.C:
		}
	}
}
