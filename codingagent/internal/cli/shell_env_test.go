package cli

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/tools"
)

// The traces' exporter headers (a collector's token) never reach the
// model's shell, though the agent process has them to export its spans.
func TestShellDoesNotSeeTheTraceHeaders(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer collector-token-123")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set := tools.Coding(ws, shellOptions(config.Config{}, nil))
	res, err := tools.Call(t.Context(), set, "shell_exec", `{"command":"env"}`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Content, "collector-token-123") || !strings.Contains(res.Content, "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("the shell's environment:\n%s", res.Content)
	}
}
