//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
)

// TestE2ELongAnswerLocal: a model that ends its task with a 2 MB answer
// (issue 39 item 4: the report went over the 1 MiB cap, was refused, the
// watcher retook its own claim as attempt 2 and the task failed). The
// task completes in one attempt; its report holds the answer's head and
// says how much was cut.
func TestE2ELongAnswerLocal(t *testing.T) {
	plan := `{"title":"Long","overview":"One task.","tasks":[
 {"id":"long","description":"TOKEN-LONG: write long.txt","dependencies":[]}]}`
	answer := "Done. " + strings.Repeat("The file is written and every line of it checked. ", 2<<20/51)
	f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-LONG", answer: answer,
		steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "long.txt", "content": "long\n"})}}}}
	e := newRunEnv(t, f)
	out, stderr, code := e.run("run", "--yes", "write the long file")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if got := e.read("workspace/long.txt"); got != "long\n" {
		t.Errorf("long.txt = %q", got)
	}
	path := filepath.Join(e.volumes, "reports", "long.md")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := protocol.ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != protocol.StatusCompleted || rep.Attempt != 1 {
		t.Errorf("report: status %s, attempt %d; want completed at the first attempt", rep.Status, rep.Attempt)
	}
	if !strings.HasPrefix(rep.Body, "Done. The file is written") || !strings.Contains(rep.Body, "[truncated: ") {
		t.Errorf("report body of %d bytes (file %d): want the answer's head and a truncation note", len(rep.Body), info.Size())
	}
	if n := f.startCount("TOKEN-LONG"); n != 1 {
		t.Errorf("the task started %d times, want 1", n)
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
}
