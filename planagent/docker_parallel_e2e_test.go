//go:build e2e

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// Four independent tasks at --parallel 4 in an image that holds only
// busybox: four attempt containers running at once, each in its own copy,
// four commits on the user's branch. "At once" is shown without a clock:
// each task's first model call is held until all four have made theirs.
// The containers' create and start events show how far apart they began.
func TestE2EDockerParallelCheckpoints(t *testing.T) {
	cli := dockerE2E(t)
	ensureTestImages(t, cli)
	var tasks []string
	var scripts []scriptTask
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("p%d", i)
		tasks = append(tasks, fmt.Sprintf(`{"id":%q,"title":"Part %d","description":"TOKEN-P%d: write %s.txt","dependencies":[]}`, id, i, i, id))
		scripts = append(scripts, scriptTask{token: fmt.Sprintf("TOKEN-P%d", i), steps: []llmtest.ToolCall{
			llmtest.Call("shell_exec", map[string]any{"command": "hostname > " + id + ".txt; ls > seen-by-" + id + ".txt"})}})
	}
	plan := `{"title":"Parts","overview":"Four parts.","tasks":[` + strings.Join(tasks, ",") + `]}`
	f := &fakeModel{plan: plan, tasks: scripts, together: 4}
	e := newDockerRunEnv(t, f)
	ws := gitWorkspace(t, e)
	volumes := layout.LabelVolumes + "=" + e.volumes
	attempts := watchContainers(t, cli, volumes, layout.LabelRole+"=attempt")

	out, stderr, code := e.run("run", "--runtime", "docker", "--image", busyboxImage, "--parallel", "4", "--workspace", ws, "--yes", "four parts")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !isClosed(f.metChan()) {
		f.mu.Lock()
		t.Errorf("the four tasks did not run at once: %d started within two minutes of the first", len(f.starts))
		f.mu.Unlock()
	}
	if n := len(attempts.settled(t)); n != 4 {
		t.Errorf("%d attempt containers, want 4", n)
	}
	creates, starts, longest := attempts.spread()
	t.Logf("the four attempt containers: created within %s, started within %s; the longest create-to-start %s",
		creates.Round(time.Millisecond), starts.Round(time.Millisecond), longest.Round(time.Millisecond))
	hosts := map[string]bool{}
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("p%d", i)
		hosts[strings.TrimSpace(readFile(t, ws, id+".txt"))] = true
		// Each copy held the user's files and none of the other tasks'.
		seen := readFile(t, ws, "seen-by-"+id+".txt")
		if !strings.Contains(seen, "notes.txt") {
			t.Errorf("%s's copy lacks the user's files:\n%s", id, seen)
		}
		for j := 1; j <= 4; j++ {
			if other := fmt.Sprintf("p%d.txt", j); j != i && strings.Contains(seen, other) {
				t.Errorf("%s's copy held %s of another task:\n%s", id, other, seen)
			}
		}
	}
	if len(hosts) != 4 {
		t.Errorf("the tasks ran in %d containers, want 4: %v", len(hosts), hosts)
	}
	log := gitIn(t, ws, "log", "--format=%s", "-4")
	for i := 1; i <= 4; i++ {
		if !strings.Contains(log, fmt.Sprintf("p%d: Part %d", i, i)) {
			t.Errorf("history lacks p%d's commit:\n%s", i, log)
		}
	}
	if n := gitIn(t, ws, "rev-list", "--count", "HEAD"); n != "5" {
		t.Errorf("%s commits, want the user's and four", n)
	}
	runID, _ := e.runState()
	assertNoContainers(t, cli, layout.LabelRun+"="+runID)
}
