package relay

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelayCarriesHTTPToTheSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "g.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "via socket %s", r.URL.Path)
	})}
	go srv.Serve(l)
	defer srv.Close()

	// A free loopback port, then the relay on it.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()
	pairs, err := Parse(addr + "=" + sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := Start(t.Context(), pairs, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	// A second Start on the same port (a nested codingagent) is no error.
	if err := Start(t.Context(), pairs, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("nested relay: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "via socket /v1/models" {
		t.Fatalf("got %q", body)
	}
}

func TestParseRefusesNonLoopback(t *testing.T) {
	for spec, want := range map[string]string{
		"0.0.0.0:4000=/s":  "loopback only",
		"127.0.0.1:4000":   "want 127.0.0.1:PORT",
		"127.0.0.1:4000=":  "want 127.0.0.1:PORT",
		"example.com:1=/s": "loopback only",
	} {
		if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
}
