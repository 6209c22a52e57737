//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// On kubernetes under closed egress (the default with the gateway) the
// attempt's pod and its acceptance command's Job reach the allow-list
// through planagent's egress proxy, beside the gateway on this host's
// address toward the pods: an allowed name (mapped by egress_hosts to a
// loopback test server) is reached, a name not allowed, the metadata
// address and a service on this host's address toward the pods are
// refused, each refusal an event of the task and attempt (the pods name
// themselves at the proxy) and on the attempt's result. This cluster's
// bridge CNI does not enforce the NetworkPolicy, so only what goes
// through the proxy is checked; the policy object is checked to open the
// proxy's port beside the gateway's.
func TestE2EKubeEgressAcceptanceCommandsGoThroughTheProxy(t *testing.T) {
	k := kubeE2E(t)
	allowed := serveCounting(t, "127.0.0.1:0", "ALLOWED-BODY")
	host := serveCounting(t, kubeGateway()+":0", "HOST-SECRET")
	// busybox wget exits 1 when the proxy turns it away; any other code
	// shows nothing about the boundary and fails the check.
	tries := []string{
		fmt.Sprintf("wget -q -O /tmp/got http://allowed.test:%d/accept && grep -q ALLOWED-BODY /tmp/got || exit 10", allowed.port),
		fmt.Sprintf("wget -q -O- http://denied.test:%d/; test $? = 1 || exit 11", allowed.port),
		fmt.Sprintf("wget -q -O- http://%s:%d/; test $? = 1 || exit 12", kubeGateway(), host.port),
		"wget -q -O- http://169.254.169.254/latest/meta-data/; test $? = 1 || exit 13",
		// What the agent's shell found (below), and the same from here.
		"grep -qx NOCRED=407 egress.txt && grep -qx OTHER=407 egress.txt && grep -qx OWN=ok egress.txt || exit 14",
		credentialTries(allowed.port, "accept"),
		"grep -qx NOCRED=407 /tmp/egress.txt && grep -qx OTHER=407 /tmp/egress.txt && grep -qx OWN=ok /tmp/egress.txt || exit 15",
		"echo ACCEPTANCE-DONE",
	}
	acceptance, err := json.Marshal([]string{strings.Join(tries, "\n")})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own shell goes the same way, and its model calls still
	// reach the gateway directly (NO_PROXY), or the run would not finish.
	// Its shell also tries the proxy without a credential and as another
	// attempt (its own password under that name): both 407; egress.txt
	// in its copy says what it got, and the acceptance command checks it.
	agentLine := fmt.Sprintf("wget -q -O- http://agent-denied.test/; echo WGET-EXIT=$?; %s; cp /tmp/egress.txt egress.txt", credentialTries(allowed.port, "agent"))
	f := &fakeModel{tasks: []scriptTask{{token: "TOKEN-FETCH",
		steps: []llmtest.ToolCall{
			llmtest.Call("shell_exec", map[string]any{"command": agentLine}),
			llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"}),
		}}}}
	e := kubeRunEnv(t, f)
	writeFile(t, e.dir, "plan.json", `{"title":"fetch","overview":"x","tasks":[{"id":"fetch","title":"Fetch","description":"TOKEN-FETCH: write a file",`+
		`"dependencies":[],"acceptance":`+string(acceptance)+`}]}`)
	e.env = append(e.env, "CODEAGENT_EGRESS_HOSTS=allowed.test=127.0.0.1")

	// The run's policy, seen while it runs (it is removed at the end).
	policies := map[string]string{}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if ps, err := k.cs.NetworkingV1().NetworkPolicies("default").List(t.Context(), metav1.ListOptions{LabelSelector: layout.LabelManaged + "=true"}); err == nil {
				for _, p := range ps.Items {
					var ports []string
					for _, r := range p.Spec.Egress {
						for _, port := range r.Ports {
							ports = append(ports, port.Port.String())
						}
					}
					policies[p.Name] = strings.Join(ports, ",")
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	cmd := e.command("run", "--yes", "--json", "-v", "--egress", "allowed.test", "--plan", filepath.Join(e.dir, "plan.json"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	close(stop)
	<-watched
	if runErr != nil {
		status, _, _ := e.run("status", "--json")
		t.Fatalf("planagent: %v\nstderr:\n%s\nstatus:\n%s", runErr, errb.String(), status)
	}
	if n := allowed.hits.Load(); n < 2 {
		t.Errorf("the allowed name was reached %d times through the proxy, want at least 2 (the agent's shell, the acceptance command)", n)
	}
	if host.hits.Load() != 0 {
		t.Errorf("a service on this host's address toward the pods was reached through the proxy (%d hits)", host.hits.Load())
	}
	refused := map[string]bool{}
	unauthenticated := map[string]int{}
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
		if ev.Data["reason"] == egress.ReasonNoCredential {
			// No credential proves who sent it: the run's, never the
			// attempt it claimed to be.
			if ev.TaskID != "" {
				t.Errorf("a refusal for want of a credential named task %q: %s", ev.TaskID, sc.Text())
			}
			unauthenticated[fmt.Sprint(ev.Data["host"])]++
			continue
		}
		if ev.TaskID != "fetch" || fmt.Sprint(ev.Data["attempt"]) != "1" {
			t.Errorf("a refusal not named task fetch, attempt 1: %s", sc.Text())
		}
		refused[fmt.Sprint(ev.Data["host"])+":"+fmt.Sprint(ev.Data["port"])] = true
	}
	for _, want := range []string{"agent-denied.test:80", "denied.test:" + strconv.Itoa(allowed.port),
		kubeGateway() + ":" + strconv.Itoa(host.port), "169.254.169.254:80"} {
		if !refused[want] {
			t.Errorf("no egress_refused event for %s; got %v\nstderr:\n%s", want, refused, errb.String())
		}
	}
	// The agent's shell and the acceptance command: none and another's, each.
	if n := unauthenticated["allowed.test"]; n != 4 || len(unauthenticated) != 1 {
		t.Errorf("refusals for want of a credential %v, want 4 for allowed.test (the agent's and the acceptance command's tries)", unauthenticated)
	}
	status, _, code := e.run("status", "--json")
	if code != 0 || !strings.Contains(status, "ACCEPTANCE-DONE") {
		t.Errorf("status --json (exit %d) lacks the acceptance command's output:\n%s", code, status)
	}
	if !strings.Contains(status, `"egress_refused"`) || !strings.Contains(status, "denied.test:"+strconv.Itoa(allowed.port)) {
		t.Errorf("status --json does not carry the acceptance command's refusals on the attempt's result:\n%s", status)
	}
	if strings.Contains(out.String()+errb.String(), e2eKey) {
		t.Error("planagent's output holds the API key")
	}
	if len(policies) != 1 {
		t.Errorf("network policies seen during the run: %v, want the run's one", policies)
	}
	for name, ports := range policies {
		if strings.Count(ports, ",") != 1 {
			t.Errorf("network policy %s opens ports %q, want the gateway's and the egress proxy's", name, ports)
		}
	}
	t.Logf("refusals: %v; without a credential %v; allowed hits %d; policy ports %v", refused, unauthenticated, allowed.hits.Load(), policies)
}

// credentialTries is a shell line for a pod of the run: through the egress
// proxy of its HTTP_PROXY with no credential, then under another
// attempt's name with its own password, then as given, each to the
// allowed name (tag tells them apart at the test server); what it got,
// one line each, in /tmp/egress.txt. busybox wget reads http_proxy and
// prints the status of a refusal.
func credentialTries(port int, tag string) string {
	return strings.Join([]string{
		`P=${HTTP_PROXY##*@}; S=${HTTP_PROXY#http://}; S=${S%@*}; PASS=${S#*:}; : > /tmp/egress.txt`,
		fmt.Sprintf(`http_proxy=http://$P wget -q -O- http://allowed.test:%d/%s-none 2>&1 | grep -q ' 407 ' && echo NOCRED=407 >> /tmp/egress.txt`, port, tag),
		fmt.Sprintf(`http_proxy=http://other.1:$PASS@$P wget -q -O- http://allowed.test:%d/%s-other 2>&1 | grep -q ' 407 ' && echo OTHER=407 >> /tmp/egress.txt`, port, tag),
		fmt.Sprintf(`wget -q -O- http://allowed.test:%d/%s | grep -q ALLOWED-BODY && echo OWN=ok >> /tmp/egress.txt`, port, tag),
	}, "; ")
}
