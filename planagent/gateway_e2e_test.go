//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runview"
)

// The agent in its container hunts for the provider's key: its
// environment, every process's /proc environ, its mounts and every file it
// can read, and it calls the model server directly with a key it invents.
// None of it yields the key (planagent's model gateway holds it; the
// container has a token of its own), the direct call fails, and the task
// still completes through the gateway. The token the container holds is
// refused by the model server too: it is worth something only at the
// gateway.
//
// Then the agent cheats on its bill: it tries to call the model behind its
// own harness's back (it finds no token: the gateway answers 401) and
// forges its report (1 prompt and 1 completion token, a cost of $77.50).
// The task's and the run's tokens and cost are exactly what the model
// server answered, every call counted once, each with figures of its own:
// a run that booked the forgery, or a gateway that missed, doubled or
// misread a call, books other figures.
//
// Closed egress (the default): the direct call finds no network, and the
// proxy refuses the model server's host. egress: open: the container
// reaches the model server, which answers the invented key 401.
func TestE2EDockerModelGatewayKeepsTheKeyOut(t *testing.T) {
	for _, egress := range []string{"closed", "open"} {
		t.Run(egress, func(t *testing.T) { gatewayKeepsTheKeyOut(t, egress) })
	}
}

func gatewayKeepsTheKeyOut(t *testing.T, egress string) {
	cli := dockerE2E(t)
	f := &fakeModel{started: make(chan string, 4)}
	e := newDockerRunEnv(t, f)
	port := strconv.Itoa(e.srv.Port())
	// The key in two halves, joined only in the container's shell: no
	// message of the model holds it unless the hunt found it.
	half := len(e2eKey) / 2
	findKey := `K="` + e2eKey[:half] + `"; K="${K}` + e2eKey[half:] + `"; `
	hunts := []string{
		`env | sort; echo HUNT-ENV-DONE`,
		`for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo "== $f"; tr '\0' '\n' < "$f"; echo; done 2>&1; echo HUNT-PROC-DONE`,
		`cat /proc/self/mountinfo; grep -rhos 'sk-[A-Za-z0-9_-]*' /codeagent /run /tmp /etc /proc/self/mountinfo | sort -u; echo HUNT-MOUNTS-DONE`,
		// Every file it can read, whatever the mount.
		findKey + `n=0; for d in /*; do case $d in /proc|/sys|/dev) continue;; esac; ` +
			`for f in $(grep -rlsF -- "$K" "$d"); do echo "KEY-IN $f"; n=$((n+1)); done; done; ` +
			`for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do grep -qsF -- "$K" "$f" && { echo "KEY-IN $f"; n=$((n+1)); }; done; echo "HUNT-FILES-KEYS=$n"`,
		// The model server from inside with an invented key (busybox
		// wget): through the egress proxy (the environment's http_proxy,
		// if any), then straight.
		`wget -q -O- --header "Authorization: Bearer sk-invented-by-the-agent" "http://host.docker.internal:` + port + `/v1/models" 2>&1; echo "HUNT-PROXIED-EXIT=$?"`,
		// (No -T and no -Y off: with them this image's busybox wget ended
		// in a segmentation fault, exit 139, which fails for the wrong
		// reason.)
		`http_proxy= HTTP_PROXY= wget -q -O- --header "Authorization: Bearer sk-invented-by-the-agent" "http://host.docker.internal:` + port + `/v1/models" 2>&1; echo "HUNT-DIRECT-EXIT=$?"`,
		// A model call behind codingagent's back, through the gateway with
		// the token it can find: the shell's environment has none, and
		// PID 1's environ is not readable (codingagent is not dumpable).
		`T=$OPENAI_API_KEY; [ -n "$T" ] || T=$(tr '\0' '\n' < /proc/1/environ | sed -n 's/^OPENAI_API_KEY=//p'); ` +
			`http_proxy= HTTP_PROXY= wget -q -O- --header "Authorization: Bearer $T" --header "Content-Type: application/json" ` +
			`--post-data '{"model":"test-model","messages":[{"role":"user","content":"SIDE-CALL TOKEN-HUNT"}]}' "$OPENAI_BASE_URL/chat/completions" 2>&1; echo "HUNT-SIDE-EXIT=$?"`,
		forgeReport("hunt", "hunt"),
	}
	var steps []llmtest.ToolCall
	for _, h := range hunts {
		steps = append(steps, llmtest.Call("shell_exec", map[string]any{"command": h}))
	}
	steps = append(steps, llmtest.Call("write_file", map[string]any{"path": "done.txt", "content": "done\n"}))
	plan := `{"title":"Hunt","overview":"x","tasks":[{"id":"hunt","description":"TOKEN-HUNT: look around, then write done.txt","dependencies":[]}]}`
	// The delay holds the task while the test looks at its container.
	f.setScript(plan, []scriptTask{{token: "TOKEN-HUNT", delay: 4 * time.Second, steps: steps}})
	bill := billEveryAnswer(e, f)
	label := layout.LabelVolumes + "=" + e.volumes

	args := []string{"run", "--runtime", "docker", "--yes", "--json"}
	if egress == "open" {
		args = append(args, "--egress", "open")
	}
	cmd := e.command(append(args, "hunt the key")...)
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
	select {
	case <-f.started:
	case err := <-exited:
		exited <- err
		fail("planagent exited (%v) before the task started", err)
	case <-time.After(90 * time.Second):
		fail("the task did not start within 90s")
	}
	// The agent can reach the model before the engine records its
	// container as running: wait for that.
	var id string
	poll.Wait(t.Context(), 30*time.Second, func() bool {
		list, err := cli.ContainerList(t.Context(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", label, layout.LabelRole+"=attempt")})
		for _, c := range list.Items {
			if err == nil && c.State == "running" {
				id = c.ID
			}
		}
		return id != ""
	})
	if id == "" {
		fail("no running attempt container labelled %s", label)
	}
	assertKeyNotInLabels(t, cli, id, e.srv.Port())
	in, err := cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		fail("inspect: %v", err)
	}
	var token, base string
	for _, kv := range in.Container.Config.Env {
		if v, ok := strings.CutPrefix(kv, "OPENAI_API_KEY="); ok {
			token = v
		}
		if v, ok := strings.CutPrefix(kv, "OPENAI_BASE_URL="); ok {
			base = v
		}
	}
	for _, m := range in.Container.Mounts {
		if strings.Contains(m.Source+m.Destination, e2eKey) {
			t.Errorf("mount %s -> %s names the key", m.Source, m.Destination)
		}
	}
	// The container's token: refused by the model server, taken by the
	// gateway (which, under closed egress, is a socket in the container's
	// own directory: the host has no address of it to call).
	if code := getModels(t, e.srv.URL, token); code != http.StatusUnauthorized {
		t.Errorf("the model server answered the container's token with %d, want 401", code)
	}
	if egress == "open" {
		if code := getModels(t, base, token); code != http.StatusOK {
			t.Errorf("the gateway answered the attempt's own token with %d, want 200", code)
		}
		if code := getModels(t, base, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"); code != http.StatusUnauthorized {
			t.Errorf("the gateway answered an invented token with %d, want 401", code)
		}
	} else if in.Container.HostConfig.NetworkMode != "none" {
		t.Errorf("the attempt's network is %q, want none under closed egress", in.Container.HostConfig.NetworkMode)
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("planagent: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	case <-time.After(3 * time.Minute):
		fail("the run did not finish within 3 minutes")
	}
	if got := e.read("workspace/done.txt"); got != "done\n" {
		t.Errorf("done.txt = %q: the task did not complete through the gateway", got)
	}
	var seen strings.Builder
	for _, req := range e.srv.Requests() {
		for _, m := range req.Messages {
			seen.WriteString(m.Content + "\n")
		}
	}
	s := seen.String()
	for _, marker := range []string{"HUNT-ENV-DONE", "HUNT-PROC-DONE", "HUNT-MOUNTS-DONE", "HUNT-FILES-KEYS=0", "forged hunt: run "} {
		if !strings.Contains(s, marker) {
			t.Errorf("the hunt %s did not run as it should; the model saw:\n%s", marker, s)
		}
	}
	if strings.Contains(s, e2eKey) || strings.Contains(s, "KEY-IN /") {
		var where []string
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, e2eKey) || strings.Contains(line, "KEY-IN /") {
				where = append(where, strings.ReplaceAll(line, e2eKey, "<the key>"))
			}
		}
		t.Fatalf("the model got the API key from inside its container:\n%s", strings.Join(where, "\n"))
	}
	if strings.Contains(s, "HUNT-PROXIED-EXIT=0") || strings.Contains(s, "HUNT-DIRECT-EXIT=0") {
		t.Errorf("a call to the model server with an invented key went through; the model saw:\n%s", s)
	}
	if !regexp.MustCompile(`401 Unauthorized\s+HUNT-SIDE-EXIT=1`).MatchString(s) {
		t.Errorf("a model call behind codingagent's back was not refused with 401 at the gateway; the model saw:\n%s", s)
	}
	if egress == "open" {
		// busybox wget: "server returned error: HTTP/1.1 401 Unauthorized".
		if !regexp.MustCompile(`401 Unauthorized\s+HUNT-DIRECT-EXIT=1`).MatchString(s) {
			t.Errorf("the direct call to the model server with an invented key was not refused with 401; the model saw:\n%s", s)
		}
	} else if !regexp.MustCompile(`403 Forbidden\s+HUNT-PROXIED-EXIT=1`).MatchString(s) {
		t.Errorf("the egress proxy did not refuse the model server's host with 403; the model saw:\n%s", s)
	}
	if strings.Contains(errb.String()+out.String(), e2eKey) {
		t.Error("planagent's output (with the container's logs) holds the API key")
	}
	bill.assertBooked(t, e, out.String(), "hunt", "TOKEN-HUNT")
	assertNoKey(t, e.volumes, e2eKey)
	assertNoContainers(t, cli, label)
}

// bill is what the model server answered, in tokens and dollars: per task
// token, and in all.
type bill struct {
	mu     sync.Mutex
	n      int
	byTask map[string]protocol.Tokens
	all    protocol.Tokens
}

// billEveryAnswer gives every successful answer of f a usage of its own,
// different from call to call, with a server-reported cost, and adds it up
// by the task token in its first user message.
func billEveryAnswer(e *runEnv, f *fakeModel) *bill {
	b := &bill{byTask: map[string]protocol.Tokens{}}
	taskToken := regexp.MustCompile(`TOKEN-[A-Z0-9]+`)
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		user := firstUser(req)
		r := f.handle(req)
		if r.Status != 0 {
			return r
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.n++
		// Odd figures, a cost that is no multiple of them: a call
		// dropped, doubled or priced from the catalog shows.
		u := protocol.Tokens{Prompt: 1000 + 37*b.n, Completion: 100 + 11*b.n, CostUSD: 0.0013 * float64(b.n)}
		cost := u.CostUSD
		r.Usage = &llmtest.Usage{PromptTokens: u.Prompt, CompletionTokens: u.Completion, TotalTokens: u.Prompt + u.Completion, Cost: &cost}
		b.all.Add(u)
		// An attempt's request (its agent's, and its memory update at the
		// end, which codingagent makes through the gateway too): not the
		// planner's or the decider's, whose prompts may quote a task.
		agent := !hasTool(req, "create_plan") && !hasTool(req, "decide")
		if tok := taskToken.FindString(user); agent && tok != "" {
			t := b.byTask[tok]
			t.Add(u)
			b.byTask[tok] = t
		}
		return r
	})
	return b
}

// assertBooked checks that task id (its token tok) and the run booked
// exactly what the model answered, tokens and server-reported cost: in the
// task_end event, in status --json and in summary.md.
func (b *bill) assertBooked(t *testing.T, e *runEnv, out, id, tok string) {
	t.Helper()
	b.mu.Lock()
	want, all := b.byTask[tok], b.all
	b.mu.Unlock()
	if want.Prompt == 0 {
		t.Fatalf("the model answered nothing for %s", tok)
	}
	t.Logf("the model answered %s: %d prompt, %d completion, $%.4f; the run: %d, %d, $%.4f",
		id, want.Prompt, want.Completion, want.CostUSD, all.Prompt, all.Completion, all.CostUSD)
	ev := taskEnds(t, out)[id]
	u, _ := ev["usage"].(map[string]any)
	if p, c := u["prompt"], u["completion"]; p != float64(want.Prompt) || c != float64(want.Completion) {
		t.Errorf("task_end of %s books %v prompt and %v completion tokens, want the model's %d and %d", id, p, c, want.Prompt, want.Completion)
	}
	status, stderr, code := e.run("status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, stderr)
	}
	var run runview.Run
	if err := json.Unmarshal([]byte(status), &run); err != nil {
		t.Fatalf("status --json: %v\n%s", err, status)
	}
	same := func(what string, got runview.Tokens, want protocol.Tokens) {
		t.Helper()
		if got.Prompt != want.Prompt || got.Completion != want.Completion || math.Abs(got.ServerCostUSD-want.CostUSD) > 1e-9 {
			t.Errorf("status --json: %s books %d prompt, %d completion, $%g; the model answered %d, %d, $%g",
				what, got.Prompt, got.Completion, got.ServerCostUSD, want.Prompt, want.Completion, want.CostUSD)
		}
	}
	found := false
	for _, task := range run.Tasks {
		if task.ID == id {
			found = true
			same("task "+id, task.Tokens, want)
			if task.CostUSD == nil || math.Abs(*task.CostUSD-want.CostUSD) > 1e-9 {
				t.Errorf("status --json: task %s costs %v, want the model's $%g", id, task.CostUSD, want.CostUSD)
			}
		}
	}
	if !found {
		t.Errorf("status --json has no task %s:\n%s", id, status)
	}
	same("the agents", run.AgentTokens, want)
	same("the run", run.Tokens, all)
	if run.CostUSD == nil || math.Abs(*run.CostUSD-all.CostUSD) > 1e-9 {
		t.Errorf("status --json: the run costs %v, want the model's $%g", run.CostUSD, all.CostUSD)
	}
	summary := e.read("reports/summary.md")
	row := fmt.Sprintf("| %s | completed | 1 | %d/%d |", id, want.Prompt, want.Completion)
	agents := fmt.Sprintf("Agent tokens %d prompt / %d completion", want.Prompt, want.Completion)
	if !strings.Contains(summary, row) || !strings.Contains(summary, agents) {
		t.Errorf("summary.md does not book the model's figures (%q, %q):\n%s", row, agents, summary)
	}
}

// getModels is GET base/models with token as a bearer: the status.
func getModels(t *testing.T, base, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(base, "/")+"/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("GET %s/models: %v", base, err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
