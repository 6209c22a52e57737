package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

const (
	baseImage = "codeagent/base:local"
	testImage = "codeagent/runtime-test:local"
	// testKey looks like a key and must never leave the container's env.
	testKey = "sk-test-0123456789abcdef-SECRET"
)

// heartbeatScript stands in for `codingagent watch`: it writes the heartbeat
// file the real watcher writes (temp + rename), echoes the key so the tests
// can see it is masked in the logs, and exits with $TEST_EXIT_CODE before
// any heartbeat when that is set. A file named "oom" in the workspace makes
// it read 64 MiB into one buffer, over the test's 32m limit: the kernel OOM-kills it at once.
const heartbeatScript = `#!/bin/sh
echo "test watcher uid=$(id -u) gid=$(id -g) key=$OPENAI_API_KEY"
if [ -n "$TEST_EXIT_CODE" ]; then
  echo "test watcher failing on purpose with $TEST_EXIT_CODE" >&2
  exit "$TEST_EXIT_CODE"
fi
dir=/app/volumes/reports/.watchers
hb="$dir/$(hostname).json"
trap 'echo "test watcher stopping"; rm -f "$hb"; exit 0' TERM INT
while :; do
  printf '{"id":"%s","host":"%s","updated":"%s"}\n' "$(hostname)" "$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$dir/.tmp-$(hostname)" && mv "$dir/.tmp-$(hostname)" "$hb"
  if [ -f /app/volumes/workspace/oom ]; then dd if=/dev/zero of=/dev/null bs=67108864 count=1 2>/dev/null; exit $?; fi
  sleep 1 & wait $!
done
`

// engine returns a client for the engine in the environment. An unreachable
// engine fails the test when CODEAGENT_REQUIRE_DOCKER=1 (CI) and skips it
// otherwise, so that developers without Docker can run the other tests.
func engine(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	}
	if err != nil {
		if os.Getenv("CODEAGENT_REQUIRE_DOCKER") == "1" {
			t.Fatalf("CODEAGENT_REQUIRE_DOCKER=1 but the docker engine is not reachable: %v", err)
		}
		t.Skipf("docker engine not reachable (set CODEAGENT_REQUIRE_DOCKER=1 to make this a failure): %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// testWatcherImage builds (cache-hit after the first time) the stand-in
// watcher image on top of the local base image. The docker tests do not
// run in parallel, so builds of the same tag cannot race.
func testWatcherImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx := t.Context()
	if _, err := cli.ImageInspect(ctx, baseImage); cerrdefs.IsNotFound(err) {
		script, _ := filepath.Abs(filepath.Join("..", "..", "..", "..", "scripts", "base-image.sh"))
		out, err := exec.CommandContext(ctx, script).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s with %s: %v\n%s", baseImage, script, err, out)
		}
	} else if err != nil {
		t.Fatalf("inspect %s: %v", baseImage, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range map[string]string{
		"Dockerfile":   "FROM " + baseImage + "\nCOPY heartbeat.sh /heartbeat.sh\nENTRYPOINT [\"/bin/sh\", \"/heartbeat.sh\"]\n",
		"heartbeat.sh": heartbeatScript,
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{testImage}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatalf("build %s: %v", testImage, err)
	}
	defer res.Body.Close()
	if err := decodeBuildStream(res.Body); err != nil {
		t.Fatalf("build %s: %v", testImage, err)
	}
	return testImage
}

// decodeBuildStream reads the classic builder's JSON messages: a failed
// build still answers 200 and reports the failure in a message.
func decodeBuildStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	var log strings.Builder
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("decode build output: %w", err)
		}
		log.WriteString(msg.Stream)
		if msg.Error != "" {
			return fmt.Errorf("%s\n%s", msg.Error, log.String())
		}
	}
}

// testLayout is a fresh volumes tree whose mount sources belong to uid:gid.
func testLayout(t testing.TB, uid, gid int) volume.Layout {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if uid != os.Getuid() || gid != os.Getgid() {
		for _, dir := range []string{l.Context(), l.Commands(), l.Reports(), l.Workspace()} {
			err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, uid, gid)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return l
}

// testRunID is unique per test and cleans up every container labelled with
// it, so a failing test leaves nothing behind.
func testRunID(t testing.TB, cli *client.Client) string {
	t.Helper()
	id := fmt.Sprintf("test-%s-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), time.Now().UnixNano())
	t.Cleanup(func() {
		// The test's context is cancelled by now; the removal must still run.
		for _, c := range containersOfRun(t, cli, id) {
			_, _ = cli.ContainerRemove(context.WithoutCancel(t.Context()), c, client.ContainerRemoveOptions{Force: true})
		}
	})
	return id
}

// containersOfRun lists the containers labelled with runID. Its context is
// not cancelled with the test: testRunID's cleanup lists with it too.
func containersOfRun(t testing.TB, cli *client.Client, runID string) []string {
	t.Helper()
	list, err := cli.ContainerList(context.WithoutCancel(t.Context()), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", layout.LabelRun+"="+runID),
	})
	if err != nil {
		t.Fatalf("list containers of run %s: %v", runID, err)
	}
	ids := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// syncBuffer collects container logs written by the log goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
