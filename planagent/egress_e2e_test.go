//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// countingServer is an HTTP server on addr that answers body and counts
// the requests it got; nil when addr cannot be listened on.
type countingServer struct {
	port int
	hits atomic.Int32
}

func serveCounting(t *testing.T, addr, body string) *countingServer {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s := &countingServer{port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		fmt.Fprint(w, body)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// The default docker run: the agent's container has no network of its own.
// A server on the host's loopback and one on the docker bridge's address
// are out of its reach (directly and through the proxy), as is the
// metadata address; an allowed name (mapped by egress_hosts to a loopback
// test server) is reached through planagent's egress proxy; a name not
// allowed is refused and the refusal is an event. The start-of-run probe
// verified the boundary, and the run records it.
func TestE2EDockerEgressClosedByDefault(t *testing.T) {
	dockerE2E(t)
	allowed := serveCounting(t, "127.0.0.1:0", "ALLOWED-BODY")
	loop := serveCounting(t, "127.0.0.1:0", "LOOPBACK-SECRET")
	bridge := serveCounting(t, "172.17.0.1:0", "BRIDGE-SECRET")
	tries := map[string]string{
		// busybox wget takes http_proxy from the environment; -Y off goes
		// direct. No -T: with it this image's busybox wget segfaults
		// (exit 139), which would pass for a refusal; without a network
		// interface a direct try fails at once anyway.
		"ALLOWED":         "wget -q -O- http://allowed.test:%d/",
		"DENIED":          "wget -q -O- http://denied.test:%d/",
		"LOOP-PROXY":      "wget -q -O- http://127.0.0.1:%d/",
		"LOOP-DIRECT":     "wget -q -O- -Y off http://127.0.0.1:%d/",
		"BRIDGE-PROXY":    "wget -q -O- http://172.17.0.1:%d/",
		"BRIDGE-DIRECT":   "wget -q -O- -Y off http://172.17.0.1:%d/",
		"METADATA-DIRECT": "wget -q -O- -Y off http://169.254.169.254/latest/meta-data/?port=%d",
		"HOSTALIAS":       "wget -q -O- -Y off http://host.docker.internal:%d/",
	}
	ports := map[string]int{"ALLOWED": allowed.port, "DENIED": allowed.port, "LOOP-PROXY": loop.port, "LOOP-DIRECT": loop.port,
		"BRIDGE-PROXY": bridge.port, "BRIDGE-DIRECT": bridge.port, "METADATA-DIRECT": 0, "HOSTALIAS": loop.port}
	var steps []llmtest.ToolCall
	for name, cmd := range tries {
		line := fmt.Sprintf(cmd, ports[name]) + " 2>&1; echo " + name + "-EXIT=$?"
		steps = append(steps, llmtest.Call("shell_exec", map[string]any{"command": line}))
	}
	steps = append(steps, llmtest.Call("write_file", map[string]any{"path": "done.txt", "content": "done\n"}))
	plan := `{"title":"Egress","overview":"x","tasks":[{"id":"reach","description":"TOKEN-REACH: try the network, then write done.txt","dependencies":[]}]}`
	f := &fakeModel{started: make(chan string, 4)}
	e := newDockerRunEnv(t, f)
	f.setScript(plan, []scriptTask{{token: "TOKEN-REACH", steps: steps}})
	e.env = append(e.env, "CODEAGENT_EGRESS_HOSTS=allowed.test=127.0.0.1")

	cmd := e.command("run", "--runtime", "docker", "--yes", "--json", "--egress", "allowed.test", "reach out")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("planagent: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	t.Logf("run took %s", time.Since(start).Round(time.Millisecond))
	if got := e.read("workspace/done.txt"); got != "done\n" {
		t.Fatalf("done.txt = %q", got)
	}
	var seen strings.Builder
	for _, req := range e.srv.Requests() {
		for _, m := range req.Messages {
			seen.WriteString(m.Content + "\n")
		}
	}
	s := seen.String()
	exit := func(name string) string {
		i := strings.LastIndex(s, name+"-EXIT=")
		if i < 0 {
			t.Fatalf("%s did not run; the model saw:\n%s", name, s)
		}
		rest := s[i+len(name)+6:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		return rest[:n]
	}
	if exit("ALLOWED") != "0" || !strings.Contains(s, "ALLOWED-BODY") || allowed.hits.Load() == 0 {
		t.Errorf("the allowed name was not reached through the proxy (hits %d); the model saw:\n%s", allowed.hits.Load(), s)
	}
	for name := range tries {
		switch code := exit(name); {
		case name == "ALLOWED":
		case code == "0":
			t.Errorf("%s succeeded from inside the container", name)
		case code != "1":
			// wget refused by the network or the proxy exits 1; anything
			// else (a crash: 139) shows nothing about the boundary.
			t.Errorf("%s ended with exit %s, not wget's refusal (1); the model saw:\n%s", name, code, s)
		}
	}
	if strings.Contains(s, "LOOPBACK-SECRET") || strings.Contains(s, "BRIDGE-SECRET") || loop.hits.Load() != 0 || bridge.hits.Load() != 0 {
		t.Errorf("a host service was reached: loopback hits %d, bridge hits %d; the model saw:\n%s", loop.hits.Load(), bridge.hits.Load(), s)
	}
	if !strings.Contains(s, "403") {
		t.Errorf("no 403 from the egress proxy in what the model saw:\n%s", s)
	}

	// The refusals are events of the run, with the task they came from.
	refused := map[string]bool{}
	var boundary any
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Type   string         `json:"type"`
			TaskID string         `json:"task_id"`
			Data   map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "egress_refused":
			if ev.TaskID != "reach" {
				t.Errorf("refusal without its task: %s", sc.Text())
			}
			refused[fmt.Sprint(ev.Data["host"])+":"+fmt.Sprint(ev.Data["port"])] = true
		case "plan_created":
			boundary = ev.Data["boundary"]
		}
	}
	for _, want := range []string{"denied.test:" + strconv.Itoa(allowed.port), "127.0.0.1:" + strconv.Itoa(loop.port), "172.17.0.1:" + strconv.Itoa(bridge.port)} {
		if !refused[want] {
			t.Errorf("no egress_refused event for %s; got %v", want, refused)
		}
	}
	if boundary != "verified" {
		t.Errorf("plan_created boundary = %v, want verified\nstderr:\n%s", boundary, errb.String())
	}
	status, _, code := e.run("status", "--json")
	if code != 0 || !strings.Contains(status, `"boundary": "verified"`) && !strings.Contains(status, `"boundary":"verified"`) {
		t.Errorf("status --json (exit %d) does not record the boundary:\n%s", code, status)
	}
	// And on the task's result: what its attempt was refused.
	if !strings.Contains(status, `"egress_refused"`) || !strings.Contains(status, "denied.test:"+strconv.Itoa(allowed.port)) {
		t.Errorf("status --json does not carry the task's refusals:\n%s", status)
	}
	summary, err := os.ReadFile(e.volumes + "/reports/summary.md")
	if err != nil || !strings.Contains(string(summary), "Boundary: verified") {
		t.Errorf("summary.md does not record the boundary:\n%s", summary)
	}
	// run --check: the same probe, no plan.
	checked, stderr, code := e.run("run", "--runtime", "docker", "--check")
	if code != 0 || strings.TrimSpace(checked) != "boundary: verified" {
		t.Errorf("run --check: exit %d %q\n%s", code, checked, stderr)
	}
}

// egress: open restores the engine's network: the probe still runs, and
// records what the attempts can reach instead of stopping the run.
func TestE2EDockerEgressOpenRecordsTheOpenBoundary(t *testing.T) {
	dockerE2E(t)
	plan := `{"title":"Open","overview":"x","tasks":[{"id":"one","description":"TOKEN-ONE: write done.txt","dependencies":[]}]}`
	f := &fakeModel{started: make(chan string, 4)}
	e := newDockerRunEnv(t, f)
	f.setScript(plan, []scriptTask{{token: "TOKEN-ONE", steps: []llmtest.ToolCall{
		llmtest.Call("write_file", map[string]any{"path": "done.txt", "content": "done\n"})}}})
	stdout, stderr, code := e.run("run", "--runtime", "docker", "--yes", "--egress", "open", "open network")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	status, _, _ := e.run("status", "--json")
	if !strings.Contains(status, "the host's bridge gateway, directly") {
		t.Errorf("status --json does not say the open network reaches the host's bridge:\n%s", status)
	}
}

// Closed egress holds for the acceptance commands too, and opens to what
// the run allows: in the acceptance container (no network of its own,
// `codingagent relay` as its first process) an allowed name is reached
// through the egress proxy, a name not allowed is refused with the
// refusal an event of the task and attempt and on the attempt's result,
// and the host's loopback, the bridge's gateway and the metadata address
// are out of reach directly and through the proxy.
func TestE2EDockerEgressAcceptanceCommandsGoThroughTheProxy(t *testing.T) {
	dockerE2E(t)
	allowed := serveCounting(t, "127.0.0.1:0", "ALLOWED-BODY")
	loop := serveCounting(t, "127.0.0.1:0", "LOOPBACK-SECRET")
	bridge := serveCounting(t, "172.17.0.1:0", "BRIDGE-SECRET")
	// Each try must end as the script says: busybox wget exits 1 when the
	// proxy or the network turns it away; any other code (a crash) shows
	// nothing about the boundary and fails the check.
	tries := []string{
		fmt.Sprintf("wget -q -O /tmp/got http://allowed.test:%d/ && grep -q ALLOWED-BODY /tmp/got || exit 10", allowed.port),
		fmt.Sprintf("wget -q -O- http://denied.test:%d/; test $? = 1 || exit 11", allowed.port),
		fmt.Sprintf("wget -q -O- http://127.0.0.1:%d/; test $? = 1 || exit 12", loop.port),
		fmt.Sprintf("wget -q -O- -Y off http://127.0.0.1:%d/; test $? = 1 || exit 13", loop.port),
		fmt.Sprintf("wget -q -O- http://172.17.0.1:%d/; test $? = 1 || exit 14", bridge.port),
		fmt.Sprintf("wget -q -O- -Y off http://172.17.0.1:%d/; test $? = 1 || exit 15", bridge.port),
		"wget -q -O- -Y off http://169.254.169.254/latest/meta-data/; test $? = 1 || exit 16",
		"echo ACCEPTANCE-DONE",
	}
	ws := filepath.Join(t.TempDir(), "ws")
	writeFile(t, ws, "notes.txt", "one\n")
	gitIn(t, ws, "init", "-q", "-b", "main")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "the user's commit")
	acceptance, err := json.Marshal([]string{strings.Join(tries, "\n")})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeModel{tasks: []scriptTask{{token: "TOKEN-FETCH",
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}}}
	e := newDockerRunEnv(t, f)
	writeFile(t, e.dir, "plan.json", `{"title":"fetch","overview":"x","tasks":[{"id":"fetch","title":"Fetch","description":"TOKEN-FETCH: write a file",`+
		`"dependencies":[],"acceptance":`+string(acceptance)+`}]}`)
	e.env = append(e.env, "CODEAGENT_EGRESS_HOSTS=allowed.test=127.0.0.1")

	cmd := e.command("run", "--runtime", "docker", "--yes", "--json", "--egress", "allowed.test",
		"--workspace", ws, "--plan", filepath.Join(e.dir, "plan.json"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		status, _, _ := e.run("status", "--json")
		t.Fatalf("planagent: %v\nstderr:\n%s\nstatus:\n%s", err, errb.String(), status)
	}
	if allowed.hits.Load() == 0 {
		t.Error("the allowed name was not reached through the proxy")
	}
	if loop.hits.Load() != 0 || bridge.hits.Load() != 0 {
		t.Errorf("a host service was reached: loopback hits %d, bridge hits %d", loop.hits.Load(), bridge.hits.Load())
	}
	refused := map[string]bool{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Type   string         `json:"type"`
			TaskID string         `json:"task_id"`
			Data   map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "egress_refused" {
			continue
		}
		if ev.TaskID != "fetch" || fmt.Sprint(ev.Data["attempt"]) != "1" {
			t.Errorf("a refusal not named task fetch, attempt 1: %s", sc.Text())
		}
		refused[fmt.Sprint(ev.Data["host"])+":"+fmt.Sprint(ev.Data["port"])] = true
	}
	for _, want := range []string{"denied.test:" + strconv.Itoa(allowed.port), "127.0.0.1:" + strconv.Itoa(loop.port), "172.17.0.1:" + strconv.Itoa(bridge.port)} {
		if !refused[want] {
			t.Errorf("no egress_refused event for %s; got %v\nstderr:\n%s", want, refused, errb.String())
		}
	}
	status, _, code := e.run("status", "--json")
	if code != 0 || !strings.Contains(status, "ACCEPTANCE-DONE") {
		t.Errorf("status --json (exit %d) lacks the acceptance command's output:\n%s", code, status)
	}
	if !strings.Contains(status, `"egress_refused"`) || !strings.Contains(status, "denied.test:"+strconv.Itoa(allowed.port)) {
		t.Errorf("status --json does not carry the acceptance command's refusals on the attempt's result:\n%s", status)
	}
}

// The local runtime's one watcher runs every attempt through one egress
// proxy: each attempt's commands name it there, so a refusal is an event
// of its task and attempt, and on that attempt's result, as in docker.
func TestE2ELocalEgressRefusalNamesTheTaskAndAttempt(t *testing.T) {
	allowed := serveCounting(t, "127.0.0.1:0", "ALLOWED-BODY")
	line := fmt.Sprintf("curl -sS http://allowed.test:%d/; echo; curl -sS http://denied.test:%d/; echo CURL-EXIT=$?", allowed.port, allowed.port)
	plan := `{"title":"Egress","overview":"x","tasks":[{"id":"reach","description":"TOKEN-REACH: try the network, then write done.txt","dependencies":[]}]}`
	f := &fakeModel{started: make(chan string, 4)}
	e := newRunEnv(t, f)
	f.setScript(plan, []scriptTask{{token: "TOKEN-REACH", steps: []llmtest.ToolCall{
		llmtest.Call("shell_exec", map[string]any{"command": line}),
		llmtest.Call("write_file", map[string]any{"path": "done.txt", "content": "done\n"}),
	}}})
	e.env = append(e.env, "CODEAGENT_EGRESS_HOSTS=allowed.test=127.0.0.1")
	cmd := e.command("run", "--yes", "--json", "--egress", "allowed.test", "reach out")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("planagent: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	if allowed.hits.Load() == 0 {
		t.Error("the allowed name was not reached through the proxy")
	}
	var refusals []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Type   string         `json:"type"`
			TaskID string         `json:"task_id"`
			Data   map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "egress_refused" {
			continue
		}
		refusals = append(refusals, fmt.Sprintf("%s.%v %v:%v", ev.TaskID, ev.Data["attempt"], ev.Data["host"], ev.Data["port"]))
	}
	want := fmt.Sprintf("reach.1 denied.test:%d", allowed.port)
	if len(refusals) != 1 || refusals[0] != want {
		t.Errorf("egress_refused events %q, want one: %q\nstderr:\n%s", refusals, want, errb.String())
	}
	status, _, code := e.run("status", "--json")
	if code != 0 || !strings.Contains(status, `"egress_refused"`) || !strings.Contains(status, "denied.test:"+strconv.Itoa(allowed.port)) {
		t.Errorf("status --json (exit %d) does not carry the attempt's refusal:\n%s", code, status)
	}
}
