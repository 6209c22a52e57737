package docker

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/planagent/internal/gateway"
)

// testGateway is a real gateway to an upstream nobody answers at: the
// tests here look at who it admits, not at answers.
func testGateway(t *testing.T) *gateway.Gateway {
	t.Helper()
	gw, err := gateway.New(gateway.Options{Upstream: "http://127.0.0.1:9/v1", Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	return gw
}

// envValue is name's value in a container's environment.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// admitted tells whether the gateway at base takes token: a refused token
// is a 401; an admitted one goes on to the (absent) upstream.
func admitted(t *testing.T, base, token string) bool {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusUnauthorized
}

// An attempt's token opens the gateway while its container runs and no
// longer once the attempt ended, by each way an attempt ends: on its own,
// abandoned (timed out), replaced by a launch of the same attempt, stopped
// with the run.
func TestDockerFakeGatewayTokenLivesWithTheAttempt(t *testing.T) {
	t.Parallel()
	ends := []struct {
		name string
		end  func(t *testing.T, d *Docker, fake *fakeEngine, a Attempt, id string)
	}{
		{"exits", func(t *testing.T, d *Docker, fake *fakeEngine, _ Attempt, id string) {
			fake.exit(id, 1, false, "")
			select {
			case <-d.Exited():
			case <-time.After(10 * time.Second):
				t.Fatal("the attempt's exit was not reported")
			}
		}},
		{"abandoned", func(t *testing.T, d *Docker, _ *fakeEngine, a Attempt, _ string) {
			if err := d.Abandon(t.Context(), a.TaskID, a.Attempt); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", func(t *testing.T, d *Docker, _ *fakeEngine, a Attempt, _ string) {
			// The same attempt launched again (a task's other attempts
			// run beside it and end nothing of it).
			if err := d.Launch(t.Context(), a); err != nil {
				t.Fatal(err)
			}
		}},
		{"stopped", func(t *testing.T, d *Docker, _ *fakeEngine, _ Attempt, _ string) {
			if err := d.Stop(context.WithoutCancel(t.Context())); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range ends {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeEngine()
			d, a := fakeDocker(t, fake)
			if err := d.Launch(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			token := envValue(fake.created[0].Config.Env, "OPENAI_API_KEY")
			id := fake.created[0].Name
			for cid, c := range fake.containers {
				if c.opts.Name == id {
					id = cid
				}
			}
			if !admitted(t, d.gatewayBase, token) {
				t.Fatal("the running attempt's token is refused")
			}
			if admitted(t, d.gatewayBase, testKey) {
				t.Fatal("the real key opens the gateway: only tokens may")
			}
			tc.end(t, d, fake, a, id)
			if admitted(t, d.gatewayBase, token) {
				t.Error("the token still opens the gateway after its attempt ended")
			}
			if tc.name == "replaced" {
				next := envValue(fake.created[len(fake.created)-1].Config.Env, "OPENAI_API_KEY")
				if next == token || !admitted(t, d.gatewayBase, next) {
					t.Error("the new attempt has no token of its own")
				}
			}
		})
	}
}

// The gateway listens where the attempts' network reaches the host: the
// network's gateway address from the engine; loopback with --network host.
func TestDockerNetworkGateway(t *testing.T) {
	nets := &fakeNetworks{gateways: map[string][]string{"bridge": {"fd00::1", "172.17.0.1"}, "agents": {"10.9.0.1"}, "none": nil,
		"old-bridge": {"subnet 172.18.0.0/16"}}}
	for _, tc := range []struct{ network, want, err string }{
		{"", "172.17.0.1", ""},
		{"agents", "10.9.0.1", ""},
		{"old-bridge", "172.18.0.1", ""},
		{"none", "", "no gateway address"},
		{"missing", "", "inspect docker network missing"},
	} {
		d := &Docker{api: nets, opts: Options{Network: tc.network}, log: discardLogger()}
		got, err := d.networkGateway(t.Context())
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("network %q: %q, %v; want %q, error with %q", tc.network, got, err, tc.want, tc.err)
		}
	}
	gw := testGateway(t)
	d := &Docker{api: nets, opts: Options{Network: "host", Gateway: gw}, log: discardLogger()}
	base, err := d.listenGateway(t.Context())
	if err != nil || !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Errorf("--network host: %q, %v; want the gateway on loopback with the upstream's path", base, err)
	}
}

// fakeNetworks answers NetworkInspect from a table of gateway addresses.
type fakeNetworks struct {
	*fakeEngine
	gateways map[string][]string
}

func (f *fakeNetworks) NetworkInspect(_ context.Context, name string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	gws, ok := f.gateways[name]
	if !ok {
		return client.NetworkInspectResult{}, errNoSuchNetwork
	}
	var res client.NetworkInspectResult
	for _, g := range gws {
		// An engine of API 1.41 lists the default bridge's subnet only.
		if subnet, ok := strings.CutPrefix(g, "subnet "); ok {
			res.Network.IPAM.Config = append(res.Network.IPAM.Config, network.IPAMConfig{Subnet: netip.MustParsePrefix(subnet)})
			continue
		}
		res.Network.IPAM.Config = append(res.Network.IPAM.Config, network.IPAMConfig{Gateway: netip.MustParseAddr(g)})
	}
	return res, nil
}
