package docker

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

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// standInCodingagent plays `codingagent watch` and `codingagent health` in
// an image built from docker/Dockerfile, so the Dockerfile and the compose
// file are tested even before the real binaries are built.
const standInCodingagent = `#!/bin/sh
case "$1" in
watch) d=/app/volumes/reports/.watchers
  while :; do echo '{}' >"$d/.hb" && mv "$d/.hb" "$d/$(hostname).json"; sleep 1; done ;;
health) [ -n "$(find /app/volumes/reports/.watchers -name '*.json' -mmin -1)" ] ;;
*) echo "stand-in codingagent: $*" >&2; exit 2 ;;
esac
`

// TestDockerComposeImage brings the compose `codingagent` service up from
// the repository's docker-compose.yml and docker/Dockerfile, waits for the
// image's HEALTHCHECK to pass, checks the hardening, and checks that the
// Docker runtime serves through it. With CODEAGENT_E2E=1 it uses the image
// `make image` built; otherwise it builds docker/Dockerfile around a
// stand-in codingagent.
func TestDockerComposeImage(t *testing.T) {
	cli := e2eEngine(t)
	compose := composeCommand(t)
	image := composeTestImage(t, cli)

	dir := t.TempDir()
	spec, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := volume.New(filepath.Join(dir, "volumes"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("catest%d", time.Now().UnixNano())
	run := func(ctx context.Context, args ...string) {
		t.Helper()
		full := append(append([]string{}, compose[1:]...), append([]string{"-p", project, "-f", filepath.Join(dir, "docker-compose.yml")}, args...)...)
		cmd := exec.CommandContext(ctx, compose[0], full...)
		cmd.Env = append(os.Environ(), "IMAGE="+image, "UID="+strconv.Itoa(os.Getuid()), "GID="+strconv.Itoa(os.Getgid()),
			"OPENAI_API_KEY="+testKey, "OPENAI_MODEL=m", "CODEAGENT_GATEWAY_TOKEN="+composeWatcherToken)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", compose[0], strings.Join(full, " "), err, out)
		}
	}
	t.Cleanup(func() { run(context.WithoutCancel(t.Context()), "down", "-t", "2") })
	run(t.Context(), "up", "-d", "codingagent")

	id := waitHealthy(t, cli, project)
	in, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := in.Container
	for _, ch := range []struct {
		name string
		ok   bool
	}{
		{"user is the operator", c.Config.User == fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())},
		{"read-only root", c.HostConfig.ReadonlyRootfs},
		{"cap drop ALL", strings.Join(c.HostConfig.CapDrop, ",") == "ALL"},
		{"pids limit", c.HostConfig.PidsLimit != nil && *c.HostConfig.PidsLimit == 512},
		{"memory limit without swap", c.HostConfig.Memory == 2<<30 && c.HostConfig.MemorySwap == 2<<30},
		// The key goes to the gateway service only: the watcher gets the token.
		{"the gateway's token, not the key", strings.Contains(strings.Join(c.Config.Env, "\n"), "OPENAI_API_KEY="+composeWatcherToken) &&
			!strings.Contains(strings.Join(c.Config.Env, "\n"), testKey)},
	} {
		if !ch.ok {
			t.Errorf("compose container: %s does not hold", ch.name)
		}
	}
	for k, v := range c.Config.Labels {
		if strings.Contains(k+v, testKey) {
			t.Errorf("label %s holds the API key", k)
		}
	}

	runID := testRunID(t, cli)
	d := startDocker(t, testOptions(t, image, runID, l, os.Getuid(), os.Getgid()))
	if err := d.Launch(t.Context(), Attempt{RunID: runID, TaskID: "t1", Attempt: 1, Dir: l.Workspace()}); err != nil {
		t.Fatal(err)
	}
	if d.Exited() != nil || len(containersOfRun(t, cli, runID)) != 0 {
		t.Fatal("the runtime started its own container although the compose watcher serves the volumes")
	}
	// Acceptance commands run in the compose watcher too.
	res, err := d.Exec(t.Context(), l.Workspace(), "touch /tmp/ok && ! touch /not-writable 2>/dev/null && pwd", time.Minute)
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Output) != composeWorkspace {
		t.Errorf("Exec in the compose watcher = %+v, %v; want /tmp writable, / read-only, cwd %s", res, err, composeWorkspace)
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
	// The engine is here (engine() passed), so the compose tool the product
	// promises must be too: its absence is a failure, not a reason to skip.
	t.Fatal("neither `docker compose` nor docker-compose is installed: install one (apt-get install docker-compose; .ci/run does)")
	return nil
}

// composeWatcherToken is the watcher's CODEAGENT_GATEWAY_TOKEN in the
// compose tests (32 characters or more, never the key).
const composeWatcherToken = "compose-watcher-token-0123456789abcdef"

func composeTestImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	if os.Getenv("CODEAGENT_E2E") == "1" {
		if _, err := cli.ImageInspect(t.Context(), layout.DefaultImage); err != nil {
			t.Fatalf("CODEAGENT_E2E=1 needs %s: run `make image`: %v", layout.DefaultImage, err)
		}
		return layout.DefaultImage
	}
	testWatcherImage(t, cli) // makes sure the local base exists
	ctxDir := t.TempDir()
	repo := filepath.Join("..", "..", "..", "..")
	for _, args := range [][]string{
		{"-r", filepath.Join(repo, "docker"), ctxDir},
		{filepath.Join(repo, ".dockerignore"), ctxDir},
	} {
		if out, err := exec.Command("cp", args...).CombinedOutput(); err != nil {
			t.Fatalf("cp %v: %v\n%s", args, err, out)
		}
	}
	bin := filepath.Join(ctxDir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"codingagent": standInCodingagent,
		"planagent":   "#!/bin/sh\necho stand-in planagent \"$@\"\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const tag = "codeagent/compose-test:local"
	cmd := exec.CommandContext(t.Context(), "docker", "build", "--pull=false", "-f", "docker/Dockerfile",
		"--build-arg", "BASE="+baseImage, "-t", tag, ".")
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build of docker/Dockerfile: %v\n%s", err, out)
	}
	return tag
}

// waitHealthy waits, with a deadline, for the project's codingagent service
// container to pass its HEALTHCHECK and returns its id.
func waitHealthy(t *testing.T, cli *client.Client, project string) string {
	t.Helper()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	status := "no container"
	for {
		list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{Filters: make(client.Filters).
			Add("label", "com.docker.compose.project="+project).Add("label", composeService+"=codingagent")})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 {
			in, err := cli.ContainerInspect(t.Context(), list.Items[0].ID, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := in.Container.State.Health; h != nil {
				status = string(h.Status)
				if status == "healthy" {
					return list.Items[0].ID
				}
			}
		}
		select {
		case <-deadline.C:
			t.Fatalf("compose codingagent did not become healthy within 90s (last status: %s)", status)
		case <-tick.C:
		}
	}
}

// TestDockerStartsDockerfileImage runs an acceptance command in the image
// built from docker/Dockerfile (the real one with CODEAGENT_E2E=1): under
// the runtime's hardening (operator uid, no capabilities) git works in the
// workspace and what it writes reaches the host.
func TestDockerStartsDockerfileImage(t *testing.T) {
	cli := e2eEngine(t)
	image := composeTestImage(t, cli)
	l := testLayout(t, os.Getuid(), os.Getgid())
	d := startDocker(t, testOptions(t, image, testRunID(t, cli), l, os.Getuid(), os.Getgid()))
	res, err := d.Exec(t.Context(), l.Workspace(), "git init -q . && git status --short && id -u", time.Minute)
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Output) != strconv.Itoa(os.Getuid()) {
		t.Fatalf("git and id in the workspace = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(l.Workspace(), ".git")); err != nil {
		t.Errorf("git init in the container did not reach the host workspace: %v", err)
	}
	if err := d.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}
