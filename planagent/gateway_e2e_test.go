//go:build e2e

package main

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/planagent/internal/runtime"
)

// The agent in its container hunts for the provider's key: its
// environment, every process's /proc environ, its mounts and every file
// under them, and it calls the model server directly with a key it
// invents. None of it yields the key (planagent's model gateway holds it;
// the container has a token of its own), the direct call is refused, and
// the task still completes through the gateway. The token the container
// holds is refused by the model server too: it is worth something only at
// the gateway.
func TestE2EDockerModelGatewayKeepsTheKeyOut(t *testing.T) {
	cli := dockerE2E(t)
	hunts := []string{
		`env | sort; echo HUNT-ENV-DONE`,
		`for f in /proc/[0-9]*/environ; do echo "== $f"; tr '\0' '\n' < "$f"; echo; done 2>&1; echo HUNT-PROC-DONE`,
		`cat /proc/self/mountinfo; grep -rhos 'sk-[A-Za-z0-9_-]*' /codeagent /tmp /etc /proc/self/mountinfo | sort -u; echo HUNT-MOUNTS-DONE`,
		// The model server from inside, with an invented key (busybox wget).
		`wget -q -O- --header "Authorization: Bearer sk-invented-by-the-agent" "http://host.docker.internal:$MODEL_PORT/v1/models" 2>&1; echo "HUNT-DIRECT-EXIT=$?"`,
	}
	plan := `{"title":"Hunt","overview":"x","tasks":[{"id":"hunt","description":"TOKEN-HUNT: look around, then write done.txt","dependencies":[]}]}`
	f := &fakeModel{started: make(chan string, 4)}
	e := newDockerRunEnv(t, f)
	var steps []llmtest.ToolCall
	for _, h := range hunts {
		h = strings.ReplaceAll(h, "$MODEL_PORT", strconv.Itoa(e.srv.Port()))
		steps = append(steps, llmtest.Call("shell_exec", map[string]any{"command": h}))
	}
	steps = append(steps, llmtest.Call("write_file", map[string]any{"path": "done.txt", "content": "done\n"}))
	// The delay holds the task while the test looks at its container.
	f.setScript(plan, []scriptTask{{token: "TOKEN-HUNT", delay: 4 * time.Second, steps: steps}})
	label := runtime.LabelVolumes + "=" + e.volumes

	// On the open network (egress: open), where the container can reach
	// the model server itself and the gateway listens on the bridge: the
	// key stays out there too. Closed egress (the default) is
	// egress_e2e_test.go's.
	cmd := e.command("run", "--runtime", "docker", "--yes", "--egress", "open", "hunt the key")
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
			Filters: make(client.Filters).Add("label", label, runtime.LabelRole+"=attempt")})
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
	// The container's token: refused by the model server, taken by the gateway.
	if code := getModels(t, e.srv.URL, token); code != http.StatusUnauthorized {
		t.Errorf("the model server answered the container's token with %d, want 401", code)
	}
	if code := getModels(t, base, token); code != http.StatusOK {
		t.Errorf("the gateway answered the attempt's own token with %d, want 200", code)
	}
	if code := getModels(t, base, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"); code != http.StatusUnauthorized {
		t.Errorf("the gateway answered an invented token with %d, want 401", code)
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
	for _, marker := range []string{"HUNT-ENV-DONE", "HUNT-PROC-DONE", "HUNT-MOUNTS-DONE", "HUNT-DIRECT-EXIT="} {
		if !strings.Contains(seen.String(), marker) {
			t.Errorf("the hunt %s did not run; the model saw:\n%s", marker, seen.String())
		}
	}
	if strings.Contains(seen.String(), e2eKey) {
		t.Fatal("the model got the API key from inside its container")
	}
	// busybox wget: "server returned error: HTTP/1.1 401 Unauthorized".
	if strings.Contains(seen.String(), "HUNT-DIRECT-EXIT=0") || !regexp.MustCompile(`401 Unauthorized\s+HUNT-DIRECT-EXIT=1`).MatchString(seen.String()) {
		t.Errorf("the direct call to the model server with an invented key was not refused with 401; the model saw:\n%s", seen.String())
	}
	if strings.Contains(errb.String()+out.String(), e2eKey) {
		t.Error("planagent's output (with the container's logs) holds the API key")
	}
	assertNoKey(t, e.volumes, e2eKey)
	assertNoContainers(t, cli, label)
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
