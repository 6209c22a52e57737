package docker

import (
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/planagent/internal/envfault"
)

// An engine whose socket is gone, or that hangs up mid-answer, is an
// outage (envfault.ErrEngine); an engine that answers with an error is not.
func TestEngineFault(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "engine.sock")
	gone, err := client.New(client.WithHost("unix://" + sock))
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	_, callErr := gone.ContainerInspect(t.Context(), "x", client.ContainerInspectOptions{})
	if callErr == nil || !errors.Is(engineFault(callErr), envfault.ErrEngine) {
		t.Errorf("no engine at the socket: %v, not marked as an outage", callErr)
	}

	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "hang") {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close() // hangs up without an answer
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"No such container: x"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	answering, err := client.New(client.WithHost("unix://"+sock), client.WithAPIVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	defer answering.Close()
	_, callErr = answering.ContainerInspect(t.Context(), "x", client.ContainerInspectOptions{})
	if callErr == nil || errors.Is(engineFault(callErr), envfault.ErrEngine) {
		t.Errorf("an answer of the engine (%v) taken for an outage", callErr)
	}
	_, callErr = answering.ContainerLogs(t.Context(), "hang", client.ContainerLogsOptions{ShowStdout: true})
	if callErr == nil || !errors.Is(engineFault(callErr), envfault.ErrEngine) {
		t.Errorf("an engine that hung up: %v, not marked as an outage", callErr)
	}
}
