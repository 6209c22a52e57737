//go:build e2e

package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// engineProxy is the Docker engine as planagent sees it through
// DOCKER_HOST: a unix socket that forwards to the real one, which the test
// cuts (listener and every connection) to make the engine disappear.
type engineProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func startEngineProxy(t *testing.T, sock string) *engineProxy {
	t.Helper()
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &engineProxy{ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", "/var/run/docker.sock")
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// close makes the engine disappear: no new connection, the open ones cut.
func (p *engineProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestE2EDockerEngineGoneDuringAcceptance: the engine disappears while the
// task's acceptance command runs (planagent talks to it through a socket
// proxy in DOCKER_HOST, closed at the acceptance container's start). The
// task is not failed: the run stops resumable (exit 2, setup_error, the
// engine named), a plain `resume` with the engine back finds the run and
// completes it, and no container is left behind.
func TestE2EDockerEngineGoneDuringAcceptance(t *testing.T) {
	cli := dockerE2E(t)
	ensureTestImages(t, cli)
	f := &fakeModel{tasks: []scriptTask{
		{token: "TOKEN-GONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a"})}},
	}}
	e := newDockerRunEnv(t, f)
	t.Cleanup(func() { assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes) })
	ws := filepath.Join(e.dir, "ws")
	writeFile(t, ws, "notes.txt", "one\n")
	gitIn(t, ws, "init", "-q", "-b", "main")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "the user's commit")
	// The acceptance command outlives the cut by far; after the resume it
	// passes.
	writeFile(t, e.dir, "plan.json", `{"title":"gone","overview":"x","tasks":[{"id":"t","title":"Write","description":"TOKEN-GONE: write a file","dependencies":[],"acceptance":["sleep 15 && test -f a.txt"]}]}`)
	sock := filepath.Join(e.dir, "engine.sock")
	proxy := startEngineProxy(t, sock)
	e.env = append(e.env, "DOCKER_HOST=unix://"+sock)

	// The acceptance container's start, seen on the real engine.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	evs := cli.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).
		Add("type", "container").Add("event", "start").
		Add("label", layout.LabelVolumes+"="+e.volumes).Add("label", layout.LabelRole+"=exec")})
	cutDone := make(chan error, 1)
	go func() {
		select {
		case <-evs.Messages:
			proxy.close()
			cutDone <- nil
		case err := <-evs.Err:
			cutDone <- err
		}
	}()
	out, stderr, code := e.run("run", "--runtime", "docker", "--image", busyboxImage, "--workspace", ws, "--plan", filepath.Join(e.dir, "plan.json"), "--yes")
	select {
	case err := <-cutDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("docker events: %v", err)
		}
	default:
		t.Fatalf("the run ended before its acceptance container started (exit %d)\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if code != 2 {
		t.Fatalf("exit %d, want 2 (the run could not go on)\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, w := range []string{"container engine", "planagent resume"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not name %q:\n%s", w, stderr)
		}
	}
	state := e.read(filepath.Join("runs", mustRunID(t, e), "state.json"))
	if !strings.Contains(state, `"status": "interrupted"`) && !strings.Contains(state, `"status":"interrupted"`) {
		t.Errorf("the run is not left interrupted:\n%s", state)
	}
	if strings.Contains(state, `"failed"`) {
		t.Errorf("the engine's outage failed something:\n%s", state)
	}

	startEngineProxy(t, sock) // the engine is back
	out, stderr, code = e.run("resume", "--runtime", "docker", "--image", busyboxImage)
	if code != 0 {
		t.Fatalf("resume: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "| t | completed |") {
		t.Errorf("resume's summary:\n%s", out)
	}
	if got := gitIn(t, ws, "log", "--format=%s", "-1"); !strings.HasPrefix(strings.TrimSpace(got), "t: ") {
		t.Errorf("the task's commit is not on the branch: %q", got)
	}
}

func mustRunID(t *testing.T, e *runEnv) string {
	t.Helper()
	id, _ := e.runState()
	return id
}
