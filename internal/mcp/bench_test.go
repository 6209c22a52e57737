package mcp

import (
	"sort"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/tools"
)

// BenchmarkStdioStart: spawn a stdio server (this test binary), the MCP
// handshake and the tool listing, then stop it; what one agent process
// pays once per server.
func BenchmarkStdioStart(b *testing.B) {
	srv := stdioFor(b)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		m := New(Options{Servers: map[string]config.MCPServer{"s": srv}, Getenv: func(string) string { return "" }})
		st := m.Start(b.Context())
		lat = append(lat, time.Since(t0))
		if len(st.Tools) == 0 {
			b.Fatalf("no tools: %v", st.Failures())
		}
		_ = m.Close()
	}
	reportPercentiles(b, lat)
}

// BenchmarkStdioCall: one tool call round trip (arguments checked against
// the schema, the call over stdio, the result rendered and capped).
func BenchmarkStdioCall(b *testing.B) {
	m := New(Options{Servers: map[string]config.MCPServer{"s": stdioFor(b)}, Getenv: func(string) string { return "" }})
	defer func() { _ = m.Close() }()
	set := tools.NewSet(m.Start(b.Context()).Tools...)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		res, err := tools.Call(b.Context(), set, "mcp__s__add", `{"a":1,"b":2}`)
		lat = append(lat, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
	reportPercentiles(b, lat)
}

func stdioFor(b *testing.B) config.MCPServer {
	exe, env := mcptestCommand(b)
	return config.MCPServer{Command: exe, Env: env}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*95)/100].Microseconds())/1000, "p95-ms")
}
