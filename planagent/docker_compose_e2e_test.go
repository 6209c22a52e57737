//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
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

	watch := watchContainers(t, cli, layout.LabelVolumes+"="+e.volumes)
	// The quick start's loopback URL, which the compose file makes reach
	// the host from inside (CODEAGENT_LOOPBACK_HOST).
	cp := composeUp(t, e, "http://127.0.0.1:"+strconv.Itoa(e.srv.Port())+"/v1")
	// The key is in the gateway's service only: the watcher holds a token.
	assertServiceKeyFree(t, cli, cp.name, "codingagent")

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
	assertNoContainers(t, cli, layout.LabelRun+"="+runID)
	// The watcher worked on each task in the task's own copy, not in the
	// workspace it was started with.
	for id, tok := range map[string]string{"alpha": "TOKEN-ALPHA", "beta": "TOKEN-BETA", "gamma": "TOKEN-GAMMA"} {
		pwd, _, _ := strings.Cut(e.toolResult("where-"+tok), "\n")
		if want := "/volumes/attempts/" + runID + "/" + id + ".1"; !strings.HasSuffix(pwd, want) {
			t.Errorf("%s's shell ran in %q, want its copy ...%s", id, pwd, want)
		}
	}

	project := cp.down()
	assertNoContainers(t, cli, "com.docker.compose.project="+project)
}

// TestE2EDockerComposePlanProfile runs the compose file's one-shot planner
// as the README says (`GOAL=… docker compose --profile plan run --rm
// planagent`) beside the watcher service: the planner, in the no-registry
// image, plans, makes each task's copy (git clone from a path needs
// git-upload-pack in the image), and the run ends completed with every
// task's change in the workspace, not "running" for good.
func TestE2EDockerComposePlanProfile(t *testing.T) {
	cli := dockerE2E(t)
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newDockerRunEnv(t, f)
	cp := composeUp(t, e, "http://127.0.0.1:"+strconv.Itoa(e.srv.Port())+"/v1")

	out, err := cp.output(t.Context(), []string{"GOAL=write greeting files"},
		"--profile", "plan", "run", "--rm", "planagent")
	if err != nil {
		t.Fatalf("the plan profile failed: %v", err)
	}
	e.assertThreeTasksDone()
	e.assertOwnedAndKeyFree()
	runID, _ := e.runState()
	var st struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(e.read(filepath.Join("runs", runID, "state.json"))), &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	if st.Status != "completed" {
		t.Errorf("run status %q after the plan profile, want completed; its output:\n%s", st.Status, out)
	}
	project := cp.down()
	assertNoContainers(t, cli, "com.docker.compose.project="+project)
}

// composeProject is one compose project over a test's volumes.
type composeProject struct {
	t       *testing.T
	name    string
	command []string // the compose CLI with its fixed arguments
	dir     string
	env     []string
}

// output runs compose with args and the extra environment, and returns
// what it printed.
func (c *composeProject) output(ctx context.Context, env []string, args ...string) (string, error) {
	full := append(append([]string{}, c.command[1:]...), args...)
	cmd := exec.CommandContext(ctx, c.command[0], full...)
	cmd.Dir = c.dir
	cmd.Env = append(append(os.Environ(), c.env...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", c.command[0], strings.Join(full, " "), err, out)
	}
	return string(out), nil
}

// down brings the project down and returns its name.
func (c *composeProject) down() string {
	c.t.Helper()
	if _, err := c.output(c.t.Context(), nil, "down", "-t", "5"); err != nil {
		c.t.Fatal(err)
	}
	return c.name
}

// composeUp brings up the repository's docker-compose.yml codingagent
// service over e's volumes, with baseURL as compose's OPENAI_BASE_URL, and
// waits for its heartbeat. The project is brought down at cleanup too.
func composeUp(t *testing.T, e *runEnv, baseURL string, env ...string) *composeProject {
	t.Helper()
	return composeUpFiles(t, e, baseURL, []string{"docker-compose.yml"}, env...)
}

// composeUpFiles is composeUp with the repository's compose files named
// (an override after the main file).
func composeUpFiles(t *testing.T, e *runEnv, baseURL string, files []string, env ...string) *composeProject {
	t.Helper()
	compose := composeCommand(t)
	var fileArgs []string
	for _, name := range files {
		spec, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatalf("read the repository's compose file: %v", err)
		}
		file := filepath.Join(e.dir, filepath.Base(name)) // beside the main file: compose resolves paths from the first file's directory
		if err := os.WriteFile(file, spec, 0o644); err != nil {
			t.Fatal(err)
		}
		fileArgs = append(fileArgs, "-f", file)
	}
	// Bind sources that do not exist are created by the engine, as root.
	for _, d := range []string{"context", "commands", "reports/.watchers", "workspace", "attempts", "egress"} {
		if err := os.MkdirAll(filepath.Join(e.volumes, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := fmt.Sprintf("cae2e%d", time.Now().UnixNano())
	c := &composeProject{t: t, name: name, dir: e.dir,
		command: append(append(append(compose, "-p", name), fileArgs...), "--project-directory", e.dir),
		// The services' settings come from compose's environment, not from planagent.
		env: []string{"IMAGE=" + e2eImage(),
			"UID=" + strconv.Itoa(os.Getuid()), "GID=" + strconv.Itoa(os.Getgid()),
			"OPENAI_API_KEY=" + e2eKey, "OPENAI_MODEL=test-model",
			"OPENAI_BASE_URL=" + baseURL, "CODEAGENT_GATEWAY_TOKEN=" + composeToken}}
	c.env = append(c.env, env...)
	t.Cleanup(func() {
		if _, err := c.output(context.WithoutCancel(t.Context()), nil, "down", "-t", "5"); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	since := time.Now()
	if _, err := c.output(t.Context(), nil, "up", "-d", "codingagent"); err != nil {
		t.Fatal(err)
	}
	waitFreshHeartbeat(t, filepath.Join(e.volumes, "reports", ".watchers"), since)
	return c
}

// composeToken is the compose watcher's model gateway token in the tests.
const composeToken = "e2e-compose-watcher-token-0123456789abcdef"

// assertServiceKeyFree fails if the running container of a compose
// service holds the API key in its environment.
func assertServiceKeyFree(t *testing.T, cli *client.Client, project, service string) {
	t.Helper()
	in := serviceContainer(t, cli, project, service)
	env := strings.Join(in.Config.Env, "\n")
	if strings.Contains(env, e2eKey) || !strings.Contains(env, "OPENAI_API_KEY="+composeToken) {
		t.Errorf("the %s service's environment holds the key, or not its gateway token:\n%s", service, env)
	}
}

// serviceContainer is the inspected container of a compose service.
func serviceContainer(t *testing.T, cli *client.Client, project, service string) container.InspectResponse {
	t.Helper()
	list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{All: true, Filters: make(client.Filters).
		Add("label", "com.docker.compose.project="+project).Add("label", "com.docker.compose.service="+service)})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the %s service's container: %v (%d)", service, err, len(list.Items))
	}
	in, err := cli.ContainerInspect(t.Context(), list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return in.Container
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
