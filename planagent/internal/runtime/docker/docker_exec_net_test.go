package docker

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// Under closed egress an acceptance command's container has no network,
// `codingagent relay` runs the command, and the egress proxy alone (no
// gateway) is a socket of its own: what it refuses is reported under the
// task and attempt whose copy the command runs in. The sockets are gone
// once Exec returns.
func TestDockerFakeExecClosedEgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dir      func(a Attempt) string
		wantWho  string
		wantWork string
	}{
		{name: "acceptance copy", dir: func(a Attempt) string { return a.Dir + ".accept" }, wantWho: "t1.1", wantWork: "/attempts/r1/t1.1.accept"},
		{name: "attempt copy", dir: func(a Attempt) string { return a.Dir }, wantWho: "t1.1", wantWork: "/attempts/r1/t1.1"},
		{name: "shared workspace", dir: func(Attempt) string { return "" }, wantWho: ".0", wantWork: "/workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeEngine()
			var mu sync.Mutex
			var heard []string
			var sockets []string
			var proxyStatus int
			fake.behave = func(e *fakeEngine, id string) {
				go func() {
					e.mu.Lock()
					var dir string
					for _, m := range e.created[len(e.created)-1].HostConfig.Mounts {
						if m.Target == relayDir {
							dir = m.Source
						}
					}
					e.mu.Unlock()
					entries, _ := os.ReadDir(dir)
					c, err := net.Dial("unix", filepath.Join(dir, proxySock))
					if err == nil {
						fmt.Fprint(c, "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n")
						if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
							mu.Lock()
							proxyStatus = resp.StatusCode
							mu.Unlock()
						}
						c.Close()
					}
					mu.Lock()
					for _, en := range entries {
						sockets = append(sockets, en.Name())
					}
					mu.Unlock()
					e.exit(id, 4, false, "tests failed\n")
				}()
			}
			d, a := fakeDocker(t, fake)
			pol, err := egress.Parse([]string{"allowed.test"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			d.egress = pol
			d.opts.EgressRefused = func(task string, n int, r egress.Refusal) {
				mu.Lock()
				heard = append(heard, fmt.Sprintf("%s.%d %s", task, n, r.Host))
				mu.Unlock()
			}
			dir := tc.dir(a)
			if dir == "" {
				dir = d.opts.Volumes.Workspace()
			}
			got, err := d.Exec(t.Context(), dir, "go test ./...", 5*time.Second)
			if err != nil || got.ExitCode != 4 || got.Output != "tests failed\n" {
				t.Fatalf("Exec = %+v, %v; want the command's exit 4 and output", got, err)
			}
			c := fake.created[0]
			if want := []string{layout.AgentBinary, "relay", "--", "/bin/sh", "-c", "go test ./..."}; !slices.Equal(c.Config.Entrypoint, want) {
				t.Errorf("entrypoint %q, want %q", c.Config.Entrypoint, want)
			}
			if c.HostConfig.NetworkMode != "none" || c.Config.WorkingDir != layout.VolumesDir+tc.wantWork {
				t.Errorf("network %q workdir %q", c.HostConfig.NetworkMode, c.Config.WorkingDir)
			}
			env := strings.Join(c.Config.Env, " ")
			if !slices.Contains(c.Config.Env, "CODEAGENT_RELAY="+relayProxy+"="+relayDir+"/"+proxySock) ||
				!slices.Contains(c.Config.Env, "HTTPS_PROXY=http://"+relayProxy) || strings.Contains(env, "OPENAI_") || strings.Contains(env, testKey) {
				t.Errorf("exec container env %v: want the proxy's relay alone, no model settings", c.Config.Env)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(sockets, []string{proxySock}) || proxyStatus != http.StatusForbidden {
				t.Errorf("sockets %v, proxy answered %d; want the proxy alone, refusing with 403", sockets, proxyStatus)
			}
			if want := tc.wantWho + " denied.test"; len(heard) != 1 || heard[0] != want {
				t.Errorf("refusals heard %q, want %q", heard, want)
			}
			for _, m := range c.HostConfig.Mounts {
				if m.Target == relayDir {
					if _, err := os.Stat(m.Source); !os.IsNotExist(err) {
						t.Errorf("the sockets' directory %s outlived Exec: %v", m.Source, err)
					}
				}
			}
		})
	}
}
