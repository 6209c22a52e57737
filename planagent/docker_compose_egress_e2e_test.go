//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// TestE2EDockerComposeClosedEgress brings up the repository's compose file
// as shipped: the watcher has no network but its loopback, its model
// traffic goes through the gateway service's unix socket (a run's tasks
// complete), and its way out is the gateway's egress proxy: a name in
// CODEAGENT_EGRESS is reached, another is refused and the refusal is a
// JSON line of `compose logs gateway`; going direct reaches nothing. An
// agent's refusal comes back to the run from the gateway's refusals file:
// an egress_refused event of its task and attempt, and on that attempt's
// result in status --json.
func TestE2EDockerComposeClosedEgress(t *testing.T) {
	cli := dockerE2E(t)
	// On the docker bridge's address: the host as the gateway container
	// reaches it, never the watcher.
	allowed := serveCounting(t, "172.17.0.1:0", "ALLOWED-BODY")
	// alpha's agent tries a name the proxy does not admit: the gateway's
	// refusal must come back to the run under alpha's first attempt.
	tasks := threeTasks()
	tasks[0].steps = append(tasks[0].steps, llmtest.Call("shell_exec", map[string]any{
		"command": fmt.Sprintf("wget -q -O- http://denied.test:%d/ 2>&1; echo AGENT-DENIED-EXIT=$?", allowed.port)}))
	// alpha's acceptance, run by planagent in the watcher (docker exec),
	// tries another: that refusal must land on alpha's attempt too.
	plan := strings.Replace(threeTaskPlan, `"acceptance":["test -f hello.txt"]`, fmt.Sprintf(
		`"acceptance":["test -f hello.txt","wget -q -O- http://accept-denied.test:%d/; test $? = 1"]`, allowed.port), 1)
	if plan == threeTaskPlan {
		t.Fatal("alpha's acceptance is not where the test puts its try")
	}
	f := &fakeModel{plan: plan, tasks: tasks}
	e := newDockerRunEnv(t, f)
	cp := composeUp(t, e, "http://127.0.0.1:"+strconv.Itoa(e.srv.Port())+"/v1",
		"CODEAGENT_EGRESS=allowed.test:"+strconv.Itoa(allowed.port), "CODEAGENT_EGRESS_HOSTS=allowed.test=172.17.0.1")
	assertServiceKeyFree(t, cli, cp.name, "codingagent")
	watcher := serviceContainer(t, cli, cp.name, "codingagent")
	if mode := string(watcher.HostConfig.NetworkMode); mode != "none" {
		t.Errorf("the watcher's network mode is %q, want none", mode)
	}

	// The run goes through the watcher, its model calls through the socket.
	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "--json", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "using the compose codingagent watcher") {
		t.Errorf("the run did not say it uses the compose watcher; stderr:\n%s", stderr)
	}
	e.assertThreeTasksDone()
	e.assertOwnedAndKeyFree()
	if got := e.toolResult("AGENT-DENIED-EXIT"); !strings.Contains(got, "AGENT-DENIED-EXIT=1") {
		t.Errorf("the agent's wget of denied.test was not refused: %q", got)
	}
	denied := "denied.test:" + strconv.Itoa(allowed.port)
	acceptDenied := "accept-denied.test:" + strconv.Itoa(allowed.port)
	// The gateway's refusals, from its file, are events of the run with
	// the task and attempt that the watcher (the agent's command) and
	// planagent (the acceptance command) named at the proxy; the boundary
	// probe's own refusals, made before the run follows the file, are not.
	var refused []string
	var verdict any
	for line := range strings.Lines(out) {
		var ev struct {
			Type   string         `json:"type"`
			TaskID string         `json:"task_id"`
			Data   map[string]any `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "egress_refused":
			refused = append(refused, fmt.Sprintf("%s.%v %v:%v", ev.TaskID, ev.Data["attempt"], ev.Data["host"], ev.Data["port"]))
		case "plan_created":
			verdict = ev.Data["boundary"]
		}
	}
	slices.Sort(refused)
	if want := []string{"alpha.1 " + acceptDenied, "alpha.1 " + denied}; !slices.Equal(refused, want) {
		t.Errorf("egress_refused events %q, want %q\nstderr:\n%s", refused, want, stderr)
	}
	// The watcher's boundary was probed in it, and held.
	if verdict != "verified" {
		t.Errorf("plan_created boundary = %v, want verified\nstderr:\n%s", verdict, stderr)
	}
	// And on alpha's result, not on the others'.
	status, _, code := e.run("status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d", code)
	}
	var st struct {
		Tasks []struct {
			ID       string `json:"id"`
			Attempts []struct {
				Attempt       int      `json:"attempt"`
				EgressRefused []string `json:"egress_refused"`
			} `json:"attempt_results"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, status)
	}
	onTask := map[string][]string{}
	for _, task := range st.Tasks {
		for _, a := range task.Attempts {
			onTask[fmt.Sprintf("%s.%d", task.ID, a.Attempt)] = a.EgressRefused
		}
	}
	if got := strings.Join(onTask["alpha.1"], "\n"); len(onTask["alpha.1"]) != 2 || !strings.Contains(got, denied) || !strings.Contains(got, acceptDenied) ||
		len(onTask["beta.1"])+len(onTask["gamma.1"]) != 0 {
		t.Errorf("refusals on the tasks' results %v, want alpha's two, of %s and %s:\n%s", onTask, denied, acceptDenied, status)
	}
	if !strings.Contains(status, `"boundary": "verified"`) {
		t.Errorf("status --json does not record the boundary verified:\n%s", status)
	}
	if summary, err := os.ReadFile(filepath.Join(e.volumes, "reports", "summary.md")); err != nil || !strings.Contains(string(summary), "Boundary: verified") {
		t.Errorf("summary.md (%v) does not record the boundary verified:\n%s", err, summary)
	}
	file, err := os.ReadFile(filepath.Join(e.volumes, "egress", "refusals.jsonl"))
	if err != nil || !strings.Contains(string(file), `"client":"alpha.1"`) || strings.Contains(string(file), e2eKey) {
		t.Errorf("the gateway's refusals file (%v) lacks alpha.1's refusal, or holds the key:\n%s", err, file)
	}

	// What `docker exec` (planagent's acceptance commands) gets in the
	// watcher: its interfaces, and each try's exit (busybox wget exits 1
	// when the proxy or the network turns it away).
	dev, err := cp.output(t.Context(), nil, "exec", "-T", "codingagent", "cat", "/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	var ifaces []string
	for line := range strings.Lines(dev) {
		// "  lo: 1234 ..." after the two header lines, whose colons are none.
		if name, _, ok := strings.Cut(line, ":"); ok {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("the watcher's interfaces are %v, want lo alone:\n%s", ifaces, dev)
	}
	script := fmt.Sprintf(`wget -q -O- http://allowed.test:%[1]d/; echo " ALLOWED exit=$?"
wget -q -O- http://denied.test:%[1]d/; echo "DENIED exit=$?"
wget -q -O- -Y off http://172.17.0.1:%[1]d/; echo "DIRECT exit=$?"
`, allowed.port)
	got, err := cp.output(t.Context(), nil, "exec", "-T", "codingagent", "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ALLOWED-BODY ALLOWED exit=0", "DENIED exit=1", "DIRECT exit=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("the watcher's tries lack %q:\n%s", want, got)
		}
	}
	if n := allowed.hits.Load(); n != 1 {
		t.Errorf("the allowed server got %d requests, want 1 (through the proxy only)", n)
	}

	logs, err := cp.output(t.Context(), nil, "logs", "--no-color", "gateway")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, `"msg":"egress refused"`) || !strings.Contains(logs, `"host":"denied.test"`) {
		t.Errorf("the gateway's log has no refusal of denied.test:\n%s", logs)
	}
	if strings.Contains(logs, e2eKey) {
		t.Errorf("the gateway's log holds the key:\n%s", logs)
	}
	project := cp.down()
	assertNoContainers(t, cli, "com.docker.compose.project="+project)
}

// TestE2EDockerComposeOpenOverride: docker/compose.open.yml, the documented
// way back to an open network, gives the watcher compose's bridge and no
// proxy settings: a server on the docker bridge's address is reached
// directly, while the model traffic still goes through the gateway's
// socket (the key stays out of the watcher). The boundary probe finds it
// out: a run that did not set egress: open stops (exit 2) naming both
// fixes, before planning; with egress: open the run goes through the
// watcher and records what the watcher reaches.
func TestE2EDockerComposeOpenOverride(t *testing.T) {
	cli := dockerE2E(t)
	bridge := serveCounting(t, "172.17.0.1:0", "BRIDGE-BODY")
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newDockerRunEnv(t, f)
	cp := composeUpFiles(t, e, "http://127.0.0.1:"+strconv.Itoa(e.srv.Port())+"/v1",
		[]string{"docker-compose.yml", "docker/compose.open.yml"})
	assertServiceKeyFree(t, cli, cp.name, "codingagent")
	if mode := string(serviceContainer(t, cli, cp.name, "codingagent").HostConfig.NetworkMode); mode != "bridge" {
		t.Errorf("the watcher's network mode is %q under the open override, want bridge", mode)
	}
	got, err := cp.output(t.Context(), nil, "exec", "-T", "codingagent", "sh", "-c",
		fmt.Sprintf(`wget -q -O- http://172.17.0.1:%d/; echo " BRIDGE exit=$?"`, bridge.port))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "BRIDGE-BODY BRIDGE exit=0") {
		t.Errorf("the open watcher did not reach the bridge's server directly:\n%s", got)
	}
	bridgeHits := bridge.hits.Load()
	out, stderr, code := e.run("run", "--runtime", "docker", "--yes", "--json", "write greeting files")
	if code != 2 {
		t.Fatalf("a closed run on the open watcher: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{"boundary does not hold", `the compose watcher has a network (network_mode "bridge", not none)`,
		"docker/compose.open.yml", "egress: open"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the stop does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, e2eKey) || strings.Contains(stderr, composeToken) {
		t.Errorf("the stop shows the key or the watcher's token:\n%s", stderr)
	}
	if n := f.startCount("TOKEN-ALPHA"); n != 0 {
		t.Errorf("alpha started %d times although the boundary stopped the run", n)
	}
	if bridge.hits.Load() != bridgeHits {
		t.Error("the probe reached the bridge test server: it must try only its own canaries")
	}

	out, stderr, code = e.run("run", "--runtime", "docker", "--yes", "--json", "--egress", "open", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	e.assertThreeTasksDone()
	e.assertOwnedAndKeyFree()
	status, _, code := e.run("status", "--json")
	if code != 0 || !strings.Contains(status, `"boundary": "failed: `) || !strings.Contains(status, "the compose watcher has a network") ||
		!strings.Contains(status, "the compose watcher has no egress proxy") {
		t.Errorf("status --json (exit %d) does not record the open watcher's boundary:\n%s", code, status)
	}
}
