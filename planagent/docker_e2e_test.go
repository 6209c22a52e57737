//go:build e2e

package main

// End-to-end tests of `planagent run --runtime docker`: the real planagent
// binary, the image `make image` built, the real engine and docker-compose,
// and the llmtest server listening where containers reach it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// e2eKey is long enough for the runtime to mask it and distinctive enough to grep for.
const e2eKey = "sk-e2e-docker-0123456789abcdef-SECRET"

// dockerE2E returns a client for the engine, or skips the test (with the
// reason) when the container end-to-end tests are off. Once asked for (CODEAGENT_E2E=1, as
// `make e2e` does) a missing engine or image fails the test: CI must not
// pass by skipping them.
func dockerE2E(t *testing.T) *client.Client {
	t.Helper()
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("container end-to-end test: set CODEAGENT_E2E=1 (make e2e) to run it")
	}
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	}
	if err != nil {
		t.Fatalf("CODEAGENT_E2E=1 (CODEAGENT_REQUIRE_DOCKER=%q) but the docker engine is not reachable (DOCKER_HOST=%q): %v",
			os.Getenv("CODEAGENT_REQUIRE_DOCKER"), os.Getenv("DOCKER_HOST"), err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if _, err := cli.ImageInspect(t.Context(), e2eImage()); err != nil {
		t.Fatalf("CODEAGENT_E2E=1 needs the image %s: run `make image`: %v", e2eImage(), err)
	}
	return cli
}

// e2eImage is the codingagent image the tests run: CODEAGENT_IMAGE (which
// planagent reads too) or the default `make image` builds.
func e2eImage() string {
	if img := os.Getenv("CODEAGENT_IMAGE"); img != "" {
		return img
	}
	return layout.DefaultImage
}

// newDockerRunEnv is newRunEnv with the model listening on every interface
// (the container reaches it through host.docker.internal) and requiring
// e2eKey, so a run that gets through proves the key reached the container.
func newDockerRunEnv(t *testing.T, f *fakeModel) *runEnv {
	t.Helper()
	e := newRunEnv(t, f, llmtest.WithAddr("0.0.0.0:0"), llmtest.WithKey(e2eKey))
	e.key = e2eKey
	return e
}

// containerWatch records the create and destroy events of the containers
// with one label, from before planagent starts: a listing afterwards would
// miss a container that was created and removed within the run.
type containerWatch struct {
	mu        sync.Mutex
	created   []string
	names     map[string]string // id → container name (it names task and attempt)
	destroyed map[string]bool
	// createdAt and startedAt: the engine's times of the create and start
	// events, by id.
	createdAt, startedAt map[string]time.Time
	changed              chan struct{} // signalled after every event
}

func watchContainers(t *testing.T, cli *client.Client, label string, more ...string) *containerWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	// Several label filters must all hold.
	res := cli.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).
		Add("type", "container").Add("event", "create").Add("event", "start").Add("event", "destroy").Add("label", append([]string{label}, more...)...)})
	w := &containerWatch{destroyed: map[string]bool{}, names: map[string]string{},
		createdAt: map[string]time.Time{}, startedAt: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-res.Messages:
				w.record(m)
			case err := <-res.Err:
				if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
					t.Errorf("docker events for %s: %v", label, err)
				}
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *containerWatch) record(m events.Message) {
	if m.Actor.Attributes[layout.LabelRole] == "preflight" {
		return // the model check before the run, not a container of the run
	}
	w.mu.Lock()
	switch m.Action {
	case events.ActionCreate:
		w.created = append(w.created, m.Actor.ID)
		w.names[m.Actor.ID] = m.Actor.Attributes["name"]
		w.createdAt[m.Actor.ID] = time.Unix(0, m.TimeNano)
	case events.ActionStart:
		w.startedAt[m.Actor.ID] = time.Unix(0, m.TimeNano)
	case events.ActionDestroy:
		w.destroyed[m.Actor.ID] = true
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// settled waits, with a deadline, until every container created has been
// destroyed, and returns the ids created.
func (w *containerWatch) settled(t *testing.T) []string {
	t.Helper()
	// Stop removed them before planagent exited; only the events may lag,
	// and more so on a busy machine.
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		created := append([]string(nil), w.created...)
		var alive []string
		for _, id := range created {
			if !w.destroyed[id] {
				alive = append(alive, id)
			}
		}
		w.mu.Unlock()
		if len(alive) == 0 {
			return created
		}
		select {
		case <-w.changed:
		case <-deadline.C:
			t.Fatalf("containers created but not removed: %v", alive)
		}
	}
}

// spread is the time between the first and the last container's create
// and start events, and the longest create-to-start time of one.
func (w *containerWatch) spread() (creates, starts, longest time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var c0, c1, s0, s1 time.Time
	for id, c := range w.createdAt {
		s, ok := w.startedAt[id]
		if !ok {
			continue
		}
		if c0.IsZero() || c.Before(c0) {
			c0 = c
		}
		if c.After(c1) {
			c1 = c
		}
		if s0.IsZero() || s.Before(s0) {
			s0 = s
		}
		if s.After(s1) {
			s1 = s
		}
		longest = max(longest, s.Sub(c))
	}
	return c1.Sub(c0), s1.Sub(s0), longest
}

// named gives the names of the containers ids, in order.
func (w *containerWatch) named(ids []string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for _, id := range ids {
		names = append(names, w.names[id])
	}
	return names
}

// assertNoContainers checks that nothing labelled label is left, running or not.
func assertNoContainers(t *testing.T, cli *client.Client, label string) {
	t.Helper()
	list, err := cli.ContainerList(context.WithoutCancel(t.Context()), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Fatalf("list containers labelled %s: %v", label, err)
	}
	for _, c := range list.Items {
		t.Errorf("container %s (%s) labelled %s left after the run", c.ID[:12], c.State, label)
	}
}

// runState reads the single run's state.json.
func (e *runEnv) runState() (runID string, attempts map[string]int) {
	e.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(e.volumes, "runs", "*", "state.json"))
	if len(paths) != 1 {
		e.t.Fatalf("run states: %v, want one", paths)
	}
	var st struct {
		RunID string                           `json:"run_id"`
		Info  map[string]struct{ Attempt int } `json:"info"`
	}
	if err := json.Unmarshal([]byte(e.read(filepath.Join("runs", filepath.Base(filepath.Dir(paths[0])), "state.json"))), &st); err != nil {
		e.t.Fatalf("state.json: %v", err)
	}
	attempts = map[string]int{}
	for id, in := range st.Info {
		attempts[id] = in.Attempt
	}
	return st.RunID, attempts
}

// assertOwnedAndKeyFree walks the volumes: every file and dir belongs to the
// invoking user (the container ran as their uid:gid) and none holds the key.
func (e *runEnv) assertOwnedAndKeyFree() {
	e.t.Helper()
	err := filepath.WalkDir(e.volumes, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if uid := info.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
			e.t.Errorf("%s belongs to uid %d, want the invoking uid %d", p, uid, os.Getuid())
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte(e.key)) {
				e.t.Errorf("%s holds the API key", p)
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("walk %s: %v", e.volumes, err)
	}
}

// assertThreeTasksDone checks the outcome of threeTaskPlan.
func (e *runEnv) assertThreeTasksDone() {
	e.t.Helper()
	if got := e.read("workspace/both.txt"); got != "hello\nworld\n" {
		e.t.Errorf("both.txt = %q", got)
	}
	e.read("workspace/docs/notes.md")
	for _, id := range []string{"alpha", "beta", "gamma"} {
		if rep := e.read("reports/" + id + ".md"); !strings.Contains(rep, "status: completed") {
			e.t.Errorf("report %s:\n%s", id, rep)
		}
	}
	if s := e.read("reports/summary.md"); !strings.Contains(s, "3 completed") {
		e.t.Errorf("summary:\n%s", s)
	}
}

func TestE2EDockerRunThreeTasks(t *testing.T) {
	cli := dockerE2E(t)
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newDockerRunEnv(t, f)
	watch := watchContainers(t, cli, layout.LabelVolumes+"="+e.volumes, layout.LabelRole+"=attempt")

	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "--json", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	e.assertThreeTasksDone()
	e.assertOwnedAndKeyFree()
	if strings.Contains(out+stderr, e2eKey) {
		t.Errorf("planagent's output (with the container's logs) holds the API key:\n%s", stderr)
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	for _, tok := range []string{"TOKEN-ALPHA", "TOKEN-BETA", "TOKEN-GAMMA"} {
		if n := f.startCount(tok); n != 1 {
			t.Errorf("%s started %d times, want 1", tok, n)
		}
	}
	// A container per task attempt.
	if created := watch.settled(t); len(created) != 3 {
		t.Errorf("the run created %d attempt containers, want 3 (one per task): %v\nstderr:\n%s", len(created), watch.named(created), stderr)
	}
	runID, _ := e.runState()
	assertNoContainers(t, cli, layout.LabelRun+"="+runID)
	assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes)
}

// TestE2EDockerKilledMidTask kills the task's container while it is being
// worked on: the task goes again in a fresh container and the run completes.
func TestE2EDockerKilledMidTask(t *testing.T) {
	cli := dockerE2E(t)
	plan := `{"title":"Slow then quick","overview":"Two tasks.","tasks":[
 {"id":"slow","description":"TOKEN-SLOW: write slow.txt","dependencies":[]},
 {"id":"quick","description":"TOKEN-QUICK: write quick.txt","dependencies":["slow"]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{
		{token: "TOKEN-SLOW", delay: 3 * time.Second, steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "slow\n"})}},
		{token: "TOKEN-QUICK", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "quick.txt", "content": "quick\n"})}},
	}}
	e := newDockerRunEnv(t, f)
	label := layout.LabelVolumes + "=" + e.volumes
	watch := watchContainers(t, cli, label, layout.LabelRole+"=attempt")

	cmd := e.command("run", "--runtime", "docker", "--yes", "make two files")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(format string, args ...any) {
		t.Helper()
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf(format+"\nstderr:\n%s", append(args, errb.String())...)
	}

	// The agent's first request for the slow task means the container has
	// claimed it; the model's delay keeps the task in the middle.
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	select {
	case tok := <-f.started:
		if tok != "TOKEN-SLOW" {
			fail("first task started is %s, want TOKEN-SLOW", tok)
		}
	case err := <-exited:
		exited <- err
		fail("planagent exited (%v) before the slow task started", err)
	case <-deadline.C:
		fail("the slow task did not start within 60s")
	}
	// The agent can reach the model before the engine records its container
	// as running (the state flips after the process is started): wait for it.
	var victim string
	var states []string
	running := poll.Wait(t.Context(), 30*time.Second, func() bool {
		list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", label, layout.LabelRole+"=attempt")})
		if err != nil {
			fail("list containers labelled %s: %v", label, err)
		}
		states = states[:0]
		for _, c := range list.Items {
			states = append(states, string(c.State))
			if c.State == "running" {
				victim = c.ID
			}
		}
		return victim != ""
	})
	if !running {
		fail("no running attempt container labelled %s within 30s of the task's first request (states %v)", label, states)
	}
	assertKeyNotInLabels(t, cli, victim, e.srv.Port())
	if _, err := cli.ContainerKill(t.Context(), victim, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		fail("docker kill %s: %v", victim[:12], err)
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("planagent: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	case <-deadline.C:
		fail("the run did not finish within 60s of the start")
	}
	if got := e.read("workspace/slow.txt") + e.read("workspace/quick.txt"); got != "slow\nquick\n" {
		t.Errorf("workspace files = %q", got)
	}
	if n := f.startCount("TOKEN-SLOW"); n != 2 {
		t.Errorf("the slow task started %d times, want 2 (killed, then retried)", n)
	}
	runID, attempts := e.runState()
	if attempts["slow"] != 2 || attempts["quick"] != 1 {
		t.Errorf("attempts = %v, want slow 2 and quick 1", attempts)
	}
	// The killed attempt's container, slow's next attempt's and quick's.
	created := watch.settled(t)
	if len(created) != 3 || created[0] != victim {
		t.Errorf("attempt containers created = %v, want the killed %s and one each for slow's second attempt and quick", created, victim[:12])
	}
	assertNoContainers(t, cli, layout.LabelRun+"="+runID)
	assertNoContainers(t, cli, label)
	if strings.Contains(errb.String(), e2eKey) {
		t.Errorf("planagent's stderr (with the container's logs) holds the API key:\n%s", errb.String())
	}
}

// planagent killed with SIGKILL while a task's container works, then
// resume: the orphaned container is removed and its task sent again at
// once from a fresh copy (not after the heartbeat timeout calls it dead).
func TestE2EDockerPlanagentKilledThenResumed(t *testing.T) {
	cli := dockerE2E(t)
	plan := `{"title":"Slow then quick","overview":"Two tasks.","tasks":[
 {"id":"slow","description":"TOKEN-SLOW: write slow.txt","dependencies":[]},
 {"id":"quick","description":"TOKEN-QUICK: write quick.txt","dependencies":["slow"]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{
		{token: "TOKEN-SLOW", delay: 6 * time.Second, steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "slow.txt", "content": "slow\n"})}},
		{token: "TOKEN-QUICK", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "quick.txt", "content": "quick\n"})}},
	}}
	e := newDockerRunEnv(t, f)
	label := layout.LabelVolumes + "=" + e.volumes
	cmd := e.command("run", "--runtime", "docker", "--yes", "make two files")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case tok := <-f.started:
		if tok != "TOKEN-SLOW" {
			t.Fatalf("first task started is %s, want TOKEN-SLOW", tok)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the slow task did not start within 60s\n%s", errb.String())
	}
	_ = cmd.Process.Kill() // SIGKILL: the attempt's container goes on alone
	_ = cmd.Wait()

	out, stderr, code := e.run("resume", "--runtime", "docker")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(stderr, "no watcher heartbeat") {
		t.Errorf("resume waited for the heartbeat timeout to call the orphaned task dead:\n%s", stderr)
	}
	if got := e.read("workspace/slow.txt") + e.read("workspace/quick.txt"); got != "slow\nquick\n" {
		t.Errorf("workspace files = %q", got)
	}
	if n := f.startCount("TOKEN-SLOW"); n != 2 {
		t.Errorf("the slow task started %d times, want 2 (orphaned, then sent again)", n)
	}
	assertNoContainers(t, cli, label)
}

// assertKeyNotInLabels inspects a live container: the key is neither in
// its labels nor in its env, which holds the attempt's gateway token and
// the model gateway's URL instead of the model server's.
func assertKeyNotInLabels(t *testing.T, cli *client.Client, id string, port int) {
	t.Helper()
	in, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect %s: %v", id[:12], err)
	}
	for k, v := range in.Container.Config.Labels {
		if strings.Contains(k+"="+v, e2eKey) {
			t.Errorf("label %s holds the API key", k)
		}
	}
	env := strings.Join(in.Container.Config.Env, "\n")
	if strings.Contains(env, e2eKey) {
		t.Error("the API key is in the container's env: the model gateway's token belongs there")
	}
	if !regexp.MustCompile(`(?m)^OPENAI_API_KEY=[0-9a-f]{64}$`).MatchString(env) {
		t.Errorf("OPENAI_API_KEY is not a gateway token:\n%s", env)
	}
	base := regexp.MustCompile(`(?m)^OPENAI_BASE_URL=(http://[0-9.]+:[0-9]+/v1)$`).FindStringSubmatch(env)
	if base == nil || strings.HasSuffix(base[1], ":"+strconv.Itoa(port)+"/v1") {
		t.Errorf("OPENAI_BASE_URL is not the model gateway on the docker network's gateway address (the model server is on port %d):\n%s", port, env)
	}
}

func TestE2EDockerEngineUnreachable(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	e.env = append(e.env, "DOCKER_HOST=tcp://127.0.0.1:1")
	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "write greeting files")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (configuration)\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Errorf("stderr has %d lines, want one clear error:\n%s", len(lines), stderr)
	}
	for _, want := range []string{"docker engine not reachable", "DOCKER_HOST=tcp://127.0.0.1:1", "--runtime local"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not mention %q:\n%s", want, stderr)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("the model got %d requests; an unusable runtime must cost no LLM call", n)
	}
}
