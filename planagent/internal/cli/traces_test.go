package cli

import (
	"testing"

	"github.com/codeagent/codeagent/internal/telemetry"
	"github.com/codeagent/codeagent/internal/telemetry/export"
)

// Without an OTLP endpoint, the exporter Main sets up (Factory.Traces)
// exports nothing. (The test of export.Setup lives here, where Main links
// the exporter anyway, rather than in a test binary of its own.)
func TestTraceSetupWithoutEndpointExportsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	shutdown, err := export.Setup(t.Context(), "x")
	if err != nil || telemetry.Enabled() {
		t.Fatalf("setup: %v, enabled %v", err, telemetry.Enabled())
	}
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}
