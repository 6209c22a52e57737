package docker

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
)

// The compose watcher's verdict: the probe's checks as the docker probe
// judges them, and besides no network of its own, a model gateway and an
// egress proxy tried; each missing one is named.
func TestJudgeCompose(t *testing.T) {
	d := &Docker{opts: Options{Key: testKey}, log: slog.New(slog.DiscardHandler)}
	held := []string{"gateway with the token", "gateway without a token", "gateway with an invented key",
		"a host not allowed, through the proxy", "a host not allowed, directly"}
	report := func(failed string, environ ...string) boundary.Report {
		var r boundary.Report
		for _, name := range held {
			if "-"+name == failed {
				continue
			}
			r.Checks = append(r.Checks, struct {
				Name   string `json:"name"`
				OK     bool   `json:"ok"`
				Detail string `json:"detail"`
			}{Name: name, OK: name != failed, Detail: "HTTP 200"})
		}
		r.Environ = append([]string{"OPENAI_API_KEY=compose-token"}, environ...)
		return r
	}
	loop := boundary.NewCanary("127.0.0.1:0")
	defer loop.Close()
	if b := d.judgeCompose(report(""), "none", loop); !b.Verified || b.String() != "verified" {
		t.Fatalf("a closed watcher: %+v, want verified", b)
	}
	for _, c := range []struct {
		name, failed, mode string
		environ            []string
		want               string
	}{
		{"a network of its own (compose.open.yml)", "", "bridge", nil, `the compose watcher has a network (network_mode "bridge", not none)`},
		{"no model gateway", "-gateway without a token", "none", nil, "the compose watcher has no model gateway"},
		{"no egress proxy", "-a host not allowed, through the proxy", "none", nil, "the compose watcher has no egress proxy"},
		{"the gateway takes no token", "gateway without a token", "none", nil, "gateway without a token (HTTP 200)"},
		{"the key in PID 1's environment", "", "none", []string{"LEAKED=" + testKey}, "the provider key is in the container's environment (LEAKED)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := d.judgeCompose(report(c.failed, c.environ...), c.mode, loop)
			if b.Verified || !strings.Contains(b.String(), c.want) {
				t.Errorf("verdict %q, want failed with %q", b, c.want)
			}
			if strings.Contains(b.String(), testKey) {
				t.Error("the verdict shows the key")
			}
		})
	}
}
