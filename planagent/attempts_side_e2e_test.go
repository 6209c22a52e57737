//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

const sideBySidePlan = `{"title":"Numbers","overview":"One task, three attempts.","tasks":[
 {"id":"nums","title":"Write numbers","description":"TOKEN-NUMS: write out.txt","dependencies":[],"acceptance":["test $(wc -l < out.txt) -lt 9"]}]}`

// The local runtime with the real watcher: a task of three attempts, each
// in its own copy under its own command and report files
// (reports/nums@<n>.md), each writing (4−n)×3 lines: attempt 1's nine fail
// the acceptance command, 2 passes with six, 3 with three. Parallel runs
// the three at once, escalate 1 then 2 and 3 together; either way 3 is
// merged, 2 stays as a ref with rank 2, 1 as a ref of a failed attempt,
// and `diff --attempt` reads 2's.
func TestE2ELocalAttemptsSideBySide(t *testing.T) {
	for _, policy := range []string{"parallel", "escalate"} {
		t.Run(policy, func(t *testing.T) {
			attemptsSideBySide(t, policy, func(t *testing.T, f *fakeModel) *runEnv { return newRunEnv(t, f) })
		})
	}
}

// The same with the docker runtime: each attempt in its own container,
// given its command under the usual name, its report back under its stem.
func TestE2EDockerAttemptsSideBySideFiles(t *testing.T) {
	dockerE2E(t)
	attemptsSideBySide(t, "parallel", dockerRuntime)
}

func attemptsSideBySide(t *testing.T, policy string, newEnv func(*testing.T, *fakeModel) *runEnv) {
	// The attempt's number is the last part of its copy's name (<task>.<n>).
	write := llmtest.Call("shell_exec", map[string]any{"command": `n=${PWD##*.}; seq $(( (4 - n) * 3 )) > out.txt`})
	f := &fakeModel{plan: sideBySidePlan, tasks: []scriptTask{{token: "TOKEN-NUMS", steps: []llmtest.ToolCall{write}}}}
	e := newEnv(t, f)
	if err := os.MkdirAll(filepath.Join(e.volumes, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run("run", "--yes", "--json", "--attempts", "3", "--attempt-policy", policy, "--parallel", "3", "write numbers")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	// The order: escalate starts 2 and 3 once 1 failed, parallel all three first.
	starts, failed1 := map[float64]int{}, -1
	for i, ev := range jsonEvents(t, out) {
		if ev["type"] == "task_start" {
			if data, ok := ev["data"].(map[string]any); ok {
				starts[data["attempt"].(float64)] = i
			}
		}
		if text, _ := ev["text"].(string); failed1 < 0 && strings.Contains(text, "attempt 1 failed") {
			failed1 = i
		}
	}
	if len(starts) != 3 || failed1 < 0 {
		t.Fatalf("task starts %v, attempt 1's failure at %d", starts, failed1)
	}
	if late := starts[2] > failed1 && starts[3] > failed1; late != (policy == "escalate") {
		t.Errorf("%s: attempts 2 and 3 started at events %d and %d, attempt 1 failed at %d", policy, starts[2], starts[3], failed1)
	}
	if got := e.read("workspace/out.txt"); got != "1\n2\n3\n" {
		t.Errorf("out.txt = %q, want attempt 3's three lines", got)
	}
	for _, stem := range []string{"nums@1", "nums@2", "nums@3"} {
		if rep := e.read("reports/" + stem + ".md"); !strings.Contains(rep, "status: completed") || !strings.Contains(rep, "id: nums") {
			t.Errorf("report %s:\n%s", stem, rep)
		}
	}
	if f.startCount("TOKEN-NUMS") != 3 {
		t.Errorf("the task started %d times, want 3", f.startCount("TOKEN-NUMS"))
	}
	sout, _, _ := e.run("status", "--json")
	var st struct {
		ID    string `json:"id"`
		Tasks []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Attempts []struct {
				Attempt   int    `json:"attempt"`
				Status    string `json:"status"`
				Rank      int    `json:"rank"`
				Ref       string `json:"ref"`
				DiffLines *int   `json:"diff_lines"`
			} `json:"attempt_results"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(sout), &st); err != nil || len(st.Tasks) != 1 {
		t.Fatalf("status --json: %v\n%s", err, sout)
	}
	want := map[int]struct {
		status string
		rank   int
		ref    bool
		diff   int
	}{1: {"failed", 0, true, 0}, 2: {"passed", 2, true, 6}, 3: {"completed", 1, false, 3}}
	if got := st.Tasks[0].Attempts; len(got) != 3 {
		t.Fatalf("attempt_results %+v", got)
	}
	for _, a := range st.Tasks[0].Attempts {
		w := want[a.Attempt]
		if a.Status != w.status || a.Rank != w.rank || (a.Ref != "") != w.ref || (w.diff != 0) != (a.DiffLines != nil) || a.DiffLines != nil && *a.DiffLines != w.diff {
			t.Errorf("attempt %d: %+v (diff %v), want %+v", a.Attempt, a, a.DiffLines, w)
		}
	}
	dout, derr, dcode := e.run("diff", st.ID, "nums", "--attempt", "2")
	if dcode != 0 || strings.Count(dout, "\n+") != 7 { // the +++ line and six added
		t.Errorf("diff --attempt 2: exit %d\n%s\n%s", dcode, dout, derr)
	}
	// A person prefers attempt 2: pick merges it in place of 3, and the
	// statuses and ranks follow.
	if pout, perr, pcode := e.run("pick", st.ID, "nums", "--attempt", "2"); pcode != 0 {
		t.Fatalf("pick: exit %d\n%s\n%s", pcode, pout, perr)
	}
	if got := e.read("workspace/out.txt"); got != "1\n2\n3\n4\n5\n6\n" {
		t.Errorf("out.txt after the pick = %q, want attempt 2's six lines", got)
	}
	sout, _, _ = e.run("status", "--json")
	if err := json.Unmarshal([]byte(sout), &st); err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Tasks[0].Attempts {
		if w := map[int]string{2: "completed 1", 3: "passed 2"}[a.Attempt]; w != "" && fmt.Sprintf("%s %d", a.Status, a.Rank) != w {
			t.Errorf("after the pick, attempt %d: %s %d, want %s", a.Attempt, a.Status, a.Rank, w)
		}
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
}
