package runrecord

import (
	"os/exec"
	"strings"
	"testing"
)

// The views read the run record, not the engine: runview, webui and review
// import this package, and nothing of them may reach the orchestrator (a
// view that could drive a run, or an engine change that rebuilds the web
// view, is what this package exists to prevent).
func TestViewsDoNotImportTheEngine(t *testing.T) {
	const engine = "github.com/codeagent/codeagent/planagent/internal/orchestrator"
	views := []string{"../runview", "../webui", "../review"}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, views...)
	out, err := exec.CommandContext(t.Context(), "go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list listed only %v", deps)
	}
	for _, d := range deps {
		if d == engine || strings.HasPrefix(d, engine+"/") {
			t.Errorf("%s is imported by one of %v: the views must read the run record (runrecord), not the engine", d, views)
		}
	}
	if !strings.Contains(string(out), "planagent/internal/runrecord\n") {
		t.Errorf("the views do not import runrecord: is the check looking at the right packages?\n%s", out)
	}
}
