//go:build e2e

package main

// End-to-end tests of the budgets: a run paused at its token budget (exit 3,
// from the flag or the config) and resumed with a larger one, a USD budget
// priced from the config, and a task stopped at its own token budget (from
// the plan or the config).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// chainPlanFile is the three tasks of threeTasks as a chain alpha → beta →
// gamma, in a plan file: no planner call, so every token is an agent's.
func chainPlanFile(t *testing.T, dir, gammaExtra string) string {
	t.Helper()
	plan := `{"title":"Greeting files","overview":"Write three files.","tasks":[
 {"id":"alpha","title":"Write hello","description":"TOKEN-ALPHA: write hello.txt","dependencies":[]},
 {"id":"beta","title":"Combine","description":"TOKEN-BETA: write world.txt and combine","dependencies":["alpha"]},
 {"id":"gamma","title":"Notes","description":"TOKEN-GAMMA: write notes.md","dependencies":["beta"]` + gammaExtra + `}]}`
	p := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(p, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fixedUsage makes every model answer report 1000 prompt and 100
// completion tokens, so budgets can be set between tasks.
func fixedUsage(e *runEnv, f *fakeModel) {
	e.srv.Handle(func(req llmtest.Request) llmtest.Reply {
		r := f.handle(req)
		if r.Status == 0 {
			r.Usage = &llmtest.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100}
		}
		return r
	})
}

// writeConfig writes the project config file codeagent.yaml where e runs.
func writeConfig(t *testing.T, e *runEnv, yaml string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "codeagent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runEndOf(t *testing.T, out string) map[string]any {
	t.Helper()
	for _, ev := range jsonEvents(t, out) {
		if ev["type"] == "run_end" {
			return ev
		}
	}
	t.Fatalf("no run_end event:\n%s", out)
	return nil
}

// The run's token budget, from the flag or from the config file, pauses
// the run the same way; resume with a larger one finishes it.
func TestE2EBudgetTokensPauseThenResume(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		flags        []string
	}{
		{name: "flag", flags: []string{"--budget-tokens", "5000"}},
		{name: "config", config: "budget_tokens: 5000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { budgetTokensPauseThenResume(t, tc.config, tc.flags) })
	}
}

func budgetTokensPauseThenResume(t *testing.T, config string, flags []string) {
	f := &fakeModel{tasks: threeTasks()}
	e := newRunEnv(t, f)
	fixedUsage(e, f)
	planFile := chainPlanFile(t, e.dir, "")
	if config != "" {
		writeConfig(t, e, config)
	}

	// alpha uses a few thousand tokens, beta takes the run past 5000: beta
	// was started under the budget and finishes; gamma never starts.
	out, stderr, code := e.run(append([]string{"run", "--yes", "--json", "--plan", planFile}, flags...)...)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (paused)\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "paused: token budget reached") || !strings.Contains(stderr, "planagent resume run-") {
		t.Errorf("stderr does not say why it paused and how to go on:\n%s", stderr)
	}
	end := runEndOf(t, out)
	if end["status"] != "paused" || !strings.Contains(end["data"].(map[string]any)["paused"].(string), "token budget reached") {
		t.Errorf("run_end: %v", end)
	}
	if stop, _ := end["data"].(map[string]any)["stop_reason"].(map[string]any); stop["reason"] != "budget_tokens" || stop["limit"] != 5000.0 || stop["used"].(float64) < 5000 {
		t.Errorf("run_end's stop_reason = %v, want budget_tokens, limit 5000 and what was used", stop)
	}
	if n := f.startCount("TOKEN-GAMMA"); n != 0 {
		t.Errorf("gamma started %d times after the budget was reached", n)
	}
	var st statusJSON
	sout, _, _ := e.run("status", "--json")
	decodeJSON(t, "status --json", sout, &st)
	if st.Status != "paused" || st.Counts["completed"] != 2 || st.Counts["pending"] != 1 || st.Tokens.Total < 5000 ||
		!strings.Contains(st.Paused, "token budget reached") || st.Budget == nil || st.Budget.Tokens != 5000 {
		t.Fatalf("after the pause: %+v", st)
	}
	paused := st.Tokens.Total
	if text, _, _ := e.run("status"); !strings.Contains(text, "Run "+st.ID+" (paused)") || !strings.Contains(text, "Paused: token budget reached") {
		t.Errorf("status of the paused run:\n%s", text)
	}

	// The same budget again: nothing can start, so it pauses at once.
	if _, stderr, code := e.run("resume"); code != 3 || !strings.Contains(stderr, "token budget reached") {
		t.Errorf("resume under the same budget: exit %d\n%s", code, stderr)
	}
	out, stderr, code = e.run("resume", "--json", "--budget-tokens", "100000")
	if code != 0 {
		t.Fatalf("resume with a larger budget: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if n := f.startCount("TOKEN-GAMMA"); n != 1 {
		t.Errorf("gamma started %d times, want 1", n)
	}
	for _, tok := range []string{"TOKEN-ALPHA", "TOKEN-BETA"} {
		if n := f.startCount(tok); n != 1 {
			t.Errorf("%s started %d times: a completed task was redone", tok, n)
		}
	}
	sout, _, _ = e.run("status", "--json")
	st = statusJSON{} // omitted fields must not keep the paused values
	decodeJSON(t, "status --json", sout, &st)
	if st.Status != "completed" || st.Counts["completed"] != 3 || st.Tokens.Total <= paused || st.Paused != "" || st.Budget.Tokens != 100000 {
		t.Errorf("after resuming: %+v", st)
	}
	if got := e.read("workspace/docs/notes.md"); got != "# Notes\n" {
		t.Errorf("notes.md = %q", got)
	}
}

func TestE2EBudgetUSD(t *testing.T) {
	f := &fakeModel{tasks: threeTasks()}
	e := newRunEnv(t, f)
	fixedUsage(e, f)
	planFile := chainPlanFile(t, e.dir, "")

	// Without a price for the model a USD budget is refused before any call.
	_, stderr, code := e.run("run", "--yes", "--plan", planFile, "--budget-usd", "1")
	if code != 2 || !strings.Contains(stderr, `price of the model "test-model"`) || !strings.Contains(stderr, "prices:") {
		t.Fatalf("USD budget without prices: exit %d, want 2 naming the missing price\n%s", code, stderr)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d model calls before the refusal", n)
	}

	// $1000 per million tokens both ways: each answer costs $1.10.
	writeConfig(t, e, "prices:\n  test-model: {input: 1000, output: 1000}\n")
	out, stderr, code := e.run("run", "--yes", "--json", "--plan", planFile, "--budget-usd", "2")
	if code != 3 {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	end := runEndOf(t, out)
	data := end["data"].(map[string]any)
	cost, _ := data["cost_usd"].(float64)
	if !strings.Contains(data["paused"].(string), "cost budget reached") || cost < 2 {
		t.Errorf("run_end: paused %q cost %v", data["paused"], data["cost_usd"])
	}
	if !strings.Contains(stderr, "--budget-usd USD") || strings.Contains(stderr, "--budget-tokens") {
		t.Errorf("the pause's hint must name the cost budget's flag:\n%s", stderr)
	}
	if text, _, _ := e.run("status"); !strings.Contains(text, "--budget-usd USD continues") {
		t.Errorf("status of the run paused at its cost budget:\n%s", text)
	}
	if stop, _ := data["stop_reason"].(map[string]any); stop["reason"] != "budget_usd" || stop["limit"] != 2.0 || stop["used"].(float64) < 2 {
		t.Errorf("run_end's stop_reason = %v, want budget_usd, limit 2 and what was spent", stop)
	}
	perTask, _ := data["per_task"].([]any)
	if len(perTask) != 3 {
		t.Fatalf("run_end per_task: %v", data["per_task"])
	}
	if a := perTask[0].(map[string]any); a["id"] != "alpha" || a["cost_usd"] == nil || a["status"] != "completed" {
		t.Errorf("run_end per_task[0]: %v", a)
	}
	var st statusJSON
	sout, _, _ := e.run("status", "--json")
	decodeJSON(t, "status --json", sout, &st)
	if st.CostUSD == nil || *st.CostUSD != cost || st.Tasks[0].CostUSD == nil {
		t.Errorf("status --json cost %v (run_end %v), alpha's %v", st.CostUSD, cost, st.Tasks[0].CostUSD)
	}
	sum := e.read("reports/summary.md")
	if !strings.Contains(sum, "| cost |") || !strings.Contains(sum, "# Run "+st.ID+": paused") {
		t.Errorf("summary:\n%s", sum)
	}
	var rows []struct {
		CostUSD *float64 `json:"cost_usd"`
	}
	rout, _, _ := e.run("runs", "--json")
	decodeJSON(t, "runs --json", rout, &rows)
	if len(rows) != 1 || rows[0].CostUSD == nil || *rows[0].CostUSD != cost {
		t.Errorf("runs --json: %s", rout)
	}
}

// A task's token budget, from the plan (under either name) or the config
// file's task_budget_tokens for every task, stops the task that passes it
// with the reason "budget", which the decision step is told.
func TestE2EBudgetPerTask(t *testing.T) {
	for _, tc := range []struct {
		name, planExtra, config string
		failed                  string // the task that passes its budget
	}{
		// gamma's own budget of 500 tokens: its first answer (1100) passes it.
		{name: "plan budget_tokens", planExtra: `,"budget_tokens":500`, failed: "gamma"},
		{name: "plan task_budget_tokens", planExtra: `,"task_budget_tokens":500`, failed: "gamma"},
		// Every task's budget: alpha, the first, passes it.
		{name: "config task_budget_tokens", config: "task_budget_tokens: 500\n", failed: "alpha"},
	} {
		t.Run(tc.name, func(t *testing.T) { budgetPerTask(t, tc.planExtra, tc.config, tc.failed) })
	}
}

func budgetPerTask(t *testing.T, planExtra, config, failed string) {
	f := &fakeModel{tasks: threeTasks()}
	e := newRunEnv(t, f)
	fixedUsage(e, f)
	planFile := chainPlanFile(t, e.dir, planExtra)
	if config != "" {
		writeConfig(t, e, config)
	}
	out, stderr, code := e.run("run", "--yes", "--json", "--plan", planFile, "--max-retries", "0")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a task failed)\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	rep := e.read("reports/" + failed + ".md")
	if !strings.Contains(rep, "status: failed") || !strings.Contains(rep, "reason: budget") {
		t.Errorf("%s's report:\n%s", failed, rep)
	}
	// The report's reason reached the agent through the task's command;
	// the task's error starts with it.
	sout, _, _ := e.run("status", "--json")
	var raw struct {
		Tasks []struct{ ID, Status, Error string } `json:"tasks"`
	}
	decodeJSON(t, "status --json", sout, &raw)
	var failedErr string
	for _, task := range raw.Tasks {
		if task.ID == failed {
			failedErr = task.Error
			if task.Status != "failed" {
				t.Errorf("%s is %s", failed, task.Status)
			}
		}
	}
	if !strings.HasPrefix(failedErr, "budget: ") {
		t.Errorf("%s's error %q does not start with the reason", failed, failedErr)
	}
	// The decision step was told it was the budget.
	told := false
	for _, req := range e.srv.Requests() {
		if !hasTool(req, "decide") {
			continue
		}
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "budget: the agent passed the task's token budget") {
				told = true
			}
		}
	}
	if !told {
		t.Errorf("the decider was not told %s failed on its budget", failed)
	}
}

func TestE2EBudgetTime(t *testing.T) {
	tasks := threeTasks()
	tasks[0].delay = 1500 * time.Millisecond // alpha runs past the budget and still finishes
	f := &fakeModel{tasks: tasks}
	e := newRunEnv(t, f)
	planFile := chainPlanFile(t, e.dir, "")
	out, stderr, code := e.run("run", "--yes", "--json", "--plan", planFile, "--budget-time", "1s")
	if code != 3 || !strings.Contains(stderr, "paused: time budget reached") {
		t.Fatalf("exit %d, want 3 at the time budget\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if f.startCount("TOKEN-ALPHA") != 1 || f.startCount("TOKEN-BETA") != 0 {
		t.Errorf("alpha started %d times, beta %d: the task in flight finishes, nothing new starts",
			f.startCount("TOKEN-ALPHA"), f.startCount("TOKEN-BETA"))
	}
	if stop, _ := runEndOf(t, out)["data"].(map[string]any)["stop_reason"].(map[string]any); stop["reason"] != "budget_time" || stop["limit"] != 1.0 || stop["used"].(float64) < 1 {
		t.Errorf("run_end's stop_reason = %v, want budget_time, limit 1 s and the time used", stop)
	}
	var st statusJSON
	sout, _, _ := e.run("status", "--json")
	decodeJSON(t, "status --json", sout, &st)
	if st.Status != "paused" || st.Counts["completed"] != 1 || st.Counts["pending"] != 2 {
		t.Errorf("status: %+v", st)
	}
}
