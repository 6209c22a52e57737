package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// Each way a run ends names its stop reason, the same in run_end, status
// --json, runs --json and summary.md, with its exit code. (budget_tokens is
// checked in budget_e2e_test.go, interrupted in run_e2e_test.go.)
func TestE2EStopReasons(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		task         scriptTask
		acceptance   string
		code         int
		tasks        []string
	}{
		{name: "completed", reason: "completed", code: 0,
			task: scriptTask{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}},
		{name: "task failed", reason: "task_failed", code: 1, acceptance: `,"acceptance":["test -f missing.txt"]`, tasks: []string{"one"},
			task: scriptTask{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}},
		{name: "model error", reason: "model_error", code: 1, tasks: []string{"one"},
			task: scriptTask{token: "TOKEN-ONE", fail: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeModel{plan: `{"title":"One","overview":"x","tasks":[{"id":"one","title":"Write a","description":"TOKEN-ONE: write a.txt","dependencies":[]` + tc.acceptance + `}]}`,
				tasks: []scriptTask{tc.task}}
			e := newRunEnv(t, f)
			writeConfig(t, e, "retries: 0\n")
			out, stderr, code := e.run("run", "--yes", "--json", "--max-retries", "0", "write a")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			stop, _ := runEndOf(t, out)["data"].(map[string]any)["stop_reason"].(map[string]any)
			if stop["reason"] != tc.reason {
				t.Errorf("run_end stop_reason = %v, want %s", stop, tc.reason)
			}
			if got := strings.Join(anyStrings(stop["tasks"]), ","); got != strings.Join(tc.tasks, ",") {
				t.Errorf("stop_reason tasks = %q, want %q", got, tc.tasks)
			}
			if tc.reason == "model_error" && !strings.Contains(stop["detail"].(string), "HTTP 500") {
				t.Errorf("model_error detail %q does not carry the provider's error", stop["detail"])
			}
			sout, _, _ := e.run("status", "--json")
			var st struct {
				Stop struct{ Reason string } `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(sout), &st); err != nil || st.Stop.Reason != tc.reason {
				t.Errorf("status --json stop_reason = %q (%v), want %s", st.Stop.Reason, err, tc.reason)
			}
			rout, _, _ := e.run("runs", "--json")
			var rows []struct {
				Stop struct{ Reason string } `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(rout), &rows); err != nil || len(rows) != 1 || rows[0].Stop.Reason != tc.reason {
				t.Errorf("runs --json: %v %s", err, rout)
			}
			if md := readFile(t, filepath.Join(e.volumes, "reports"), "summary.md"); !strings.Contains(md, "Stop reason: "+tc.reason) {
				t.Errorf("summary.md has no stop reason:\n%s", md)
			}
		})
	}
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
