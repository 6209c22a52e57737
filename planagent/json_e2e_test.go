//go:build e2e

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
	"github.com/codeagent/codeagent/internal/protocol"
)

// --json is for machines: every event of a run, planning included, carries
// the run id, and JSON output writes ">" as ">" (not \u003e), "<" and "&"
// as written too: the plan, the events and the views (status, runs, graph).
func TestE2EJSONOutput(t *testing.T) {
	plan := `{"title":"Redirect","overview":"a > b","tasks":[
 {"id":"one","title":"Write a > b & <c>","description":"TOKEN-ONE: write one.txt","dependencies":[],"acceptance":["test -s one.txt > /dev/null"]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-ONE", steps: []llmtest.ToolCall{
		llmtest.Call("write_file", map[string]any{"path": "one.txt", "content": "1 > 0\n"})}}}}
	e := newRunEnv(t, f)
	const goal = "redirect a > b && c < d"

	out, stderr, code := e.run("plan", "--json", goal)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s", code, stderr)
	}
	if strings.Contains(out, `\u003e`) || !strings.Contains(out, `"test -s one.txt > /dev/null"`) {
		t.Errorf("plan --json escapes >:\n%s", out)
	}

	out, stderr, code = e.run("run", "--yes", "--json", goal)
	if code != 0 {
		t.Fatalf("run exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	// (A tool call's args are the model's own JSON text, passed as is.)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"plan_created"`) && (strings.Contains(line, `\u003e`) || !strings.Contains(line, `"overview":"a > b"`)) {
			t.Errorf("run --json escapes >: %s", line)
		}
	}
	evs := jsonEvents(t, out)
	runID, planning := "", 0
	for _, ev := range evs {
		id, _ := ev["run_id"].(string)
		if id == "" {
			t.Errorf("event without run_id: %v", ev)
			continue
		}
		if runID == "" {
			runID = id
		}
		if id != runID {
			t.Errorf("event of another run %q (want %q): %v", id, runID, ev)
		}
	}
	for _, ev := range evs {
		if ev["type"] == "plan_created" {
			break
		}
		planning++
	}
	// The progress line and elapsed_ms give the same time, in one format.
	for _, ev := range evs {
		if ev["type"] != "task_end" {
			continue
		}
		data, _ := ev["data"].(map[string]any)
		ms, _ := data["elapsed_ms"].(float64)
		want := "[1/1] Write a > b & <c> — completed in " + protocol.FormatDuration(time.Duration(ms)*time.Millisecond)
		if ms < 1 || ev["text"] != want {
			t.Errorf("task_end text %q, elapsed_ms %v; want %q", ev["text"], ms, want)
		}
	}
	if planning == 0 {
		t.Errorf("no planning event before plan_created: %v", evs)
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", "--json"}, []string{`"goal": "` + goal + `"`, `"title": "Write a > b & <c>"`}},
		{[]string{"runs", "--json"}, []string{`"goal": "` + goal + `"`}},
		{[]string{"graph", "--format", "json"}, []string{`"title": "Write a > b & <c>"`}},
	} {
		out, stderr, code := e.run(c.args...)
		if code != 0 {
			t.Errorf("%v: exit %d\n%s", c.args, code, stderr)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %s (escaped for HTML?):\n%s", c.args, want, out)
			}
		}
	}
}
