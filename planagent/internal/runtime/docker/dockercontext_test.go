package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// writeContext makes a Docker CLI context store entry as `docker context
// create NAME --docker host=HOST` does.
func writeContext(t *testing.T, configDir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	dir := filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
}

// As the docker CLI: DOCKER_HOST first, else DOCKER_CONTEXT, else the
// config's currentContext; "default" is the plain default.
func TestResolveEngineFollowsTheDockerContext(t *testing.T) {
	cfg := t.TempDir()
	writeContext(t, cfg, "colima", "unix:///tmp/colima/docker.sock")
	writeContext(t, cfg, "remote", "tcp://10.0.0.9:2375")
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths":{},"currentContext":"colima"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DOCKER_CONFIG": cfg}, "docker context colima (unix:///tmp/colima/docker.sock)"},
		{map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_CONTEXT": "remote"}, "docker context remote (tcp://10.0.0.9:2375)"},
		{map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_CONTEXT": "default"}, "DOCKER_HOST unset, docker context default"},
		{map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_HOST": "tcp://127.0.0.1:1"}, "DOCKER_HOST=tcp://127.0.0.1:1"},
		{map[string]string{"HOME": filepath.Dir(cfg) + "/no-home"}, "DOCKER_HOST unset, docker context default"},
	}
	for _, tt := range tests {
		eng, err := resolveEngine(func(k string) string { return tt.env[k] })
		if err != nil || eng.describe != tt.want {
			t.Errorf("env %v: %q, %v; want %q", tt.env, eng.describe, err, tt.want)
		}
	}
	_, err := resolveEngine(func(k string) string { return map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_CONTEXT": "gone"}[k] })
	if err == nil || !strings.Contains(err.Error(), `docker context "gone"`) || !strings.Contains(err.Error(), "docker context ls") {
		t.Errorf("unknown context: %v", err)
	}
}

// The runtime reaches the engine through the current context, and says
// which context it used when the engine there does not answer.
func TestDockerUsesTheCurrentContext(t *testing.T) {
	real := engine(t) // the engine of this machine, found the usual way
	host := real.DaemonHost()
	cfg := t.TempDir()
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONFIG", cfg)
	writeContext(t, cfg, "here", host)
	writeContext(t, cfg, "nowhere", "unix://"+filepath.Join(cfg, "none.sock"))
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"currentContext":"here"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := resolveEngine(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(eng.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil || cli.DaemonHost() != host {
		t.Fatalf("ping through context here (%s): %v (host %s)", host, err, cli.DaemonHost())
	}

	t.Setenv("DOCKER_CONTEXT", "nowhere")
	_, err = New(t.Context(), Options{Volumes: testLayout(t, os.Getuid(), os.Getgid()), RunID: "r1"})
	if !errors.Is(err, ErrEngineUnreachable) || !strings.Contains(err.Error(), "docker context nowhere") || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("New with an unreachable context: %v", err)
	}
}
