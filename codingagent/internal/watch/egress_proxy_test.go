package watch

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// With the local runtime's egress proxy (AgentConfig.EgressProxy) each
// attempt's commands, its setup command among them, reach the proxy under
// the attempt's name: the proxy, shared by every attempt of the watcher,
// can say whose request it refused.
func TestAgentRunnerNamesTheAttemptToTheEgressProxy(t *testing.T) {
	var mu sync.Mutex
	var names []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, cred, _ := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
		raw, _ := base64.StdEncoding.DecodeString(cred)
		mu.Lock()
		names = append(names, r.URL.Host+" "+string(raw))
		mu.Unlock()
		http.Error(w, "refused", http.StatusForbidden)
	}))
	defer proxy.Close()
	l := newLayout(t)
	srv := llmtest.New(t)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if isMemoryRequest(req) {
			return llmtest.Text("- none")
		}
		if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return llmtest.Text("Tried.")
		}
		return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "curl -s -o /dev/null http://tool.test/"}))
	})
	runner := agentRunner(t, l, srv)
	runner.cfg.EgressProxy = proxy.URL
	c := command("build.api", 3)
	c.Setup = "curl -s -o /dev/null http://setup.test/"
	rep, err := runner.Run(t.Context(), c, "context", events.Discard)
	if err != nil || rep.Status != "completed" {
		t.Fatalf("run: %v %+v", err, rep)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(names)
	want := []string{"setup.test build.api.3:attempt", "tool.test build.api.3:attempt"}
	if !slices.Equal(names, want) {
		t.Errorf("the proxy heard %q, want %q", names, want)
	}

	runner.cfg.EgressProxy = "socks5://127.0.0.1:1"
	if _, err := runner.Run(t.Context(), command("t2", 1), "context", events.Discard); err == nil || !strings.Contains(err.Error(), "CODEAGENT_EGRESS_PROXY") {
		t.Errorf("a proxy that is no http:// URL: %v, want an error naming CODEAGENT_EGRESS_PROXY", err)
	}
}
