package runview

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

var t0 = time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)

// testState is a diamond a → (b, c) → d after a retry of b: a and b
// completed, c failed, d skipped; b took two attempts.
func testState(t *testing.T) *runrecord.State {
	t.Helper()
	p := &planspec.Plan{Title: "Diamond", Tasks: []planspec.Task{
		{ID: "a", Title: `Set up "the" <module>`, Description: "set up"},
		{ID: "b", Title: "Write b", Description: "b", Dependencies: []string{"a"}},
		{ID: "c.x-1", Description: "Write c\nwith details", Dependencies: []string{"a"}},
		{ID: "d", Title: "Join", Description: "d", Dependencies: []string{"b", "c.x-1"}},
	}}
	st, err := runrecord.NewState("run-20261123-010000-0001", "build a diamond", p, tokens.Usage{Prompt: 1000, Completion: 200}, t0)
	if err != nil {
		t.Fatal(err)
	}
	st.Settings = &runrecord.Settings{Model: "m1"}
	set := func(i int, s taskgraph.Status, attempts int, result, errText string) {
		st.Tasks[i].Status, st.Tasks[i].Attempts, st.Tasks[i].Result, st.Tasks[i].Error = s, attempts, result, errText
	}
	set(0, taskgraph.Completed, 1, "module ready", "")
	set(1, taskgraph.Completed, 2, "b | written", "")
	set(2, taskgraph.Failed, 1, "", "tests failed")
	set(3, taskgraph.Skipped, 0, "", "")
	st.Tasks[3].SkippedBy = "c.x-1"
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	st.Info["a"] = &runrecord.TaskInfo{Attempt: 1, Tokens: protocol.Tokens{Prompt: 100, Completion: 10}, Duration: 4 * time.Second,
		Spans: []runrecord.Span{{Attempt: 1, Start: at(1), End: at(5), Status: "completed"}}}
	st.Info["b"] = &runrecord.TaskInfo{Attempt: 2, Tokens: protocol.Tokens{Prompt: 300, Completion: 30}, Duration: 5 * time.Second,
		FilesChanged: []string{"b.go"}, Commit: "abc123",
		Spans: []runrecord.Span{{Attempt: 1, Start: at(6), End: at(8), Status: "failed"}, {Attempt: 2, Start: at(9), End: at(13), Status: "completed"}}}
	// c has only the fields of a state written before spans were kept.
	st.Info["c.x-1"] = &runrecord.TaskInfo{Attempt: 1, DispatchedAt: at(6), Duration: 3 * time.Second,
		Tokens: protocol.Tokens{Prompt: 50, Completion: 5}}
	st.Decisions = []runrecord.Decision{{Time: at(9), Task: "c.x-1", Action: "continue", Reason: "not needed"}}
	st.Status = runrecord.RunFailed
	st.Updated = at(20)
	return st
}

func TestBuild(t *testing.T) {
	r := Build(testState(t), Options{Prices: Prices{"m1": {Input: 2, Output: 10}}, Model: "other"})
	var ids []string
	for _, x := range r.Tasks {
		ids = append(ids, x.ID)
	}
	if got := strings.Join(ids, ","); got != "a,b,c.x-1,d" {
		t.Errorf("order %s", got)
	}
	if r.Model != "m1" {
		t.Errorf("model %q: the state's model wins over the fallback", r.Model)
	}
	want := map[string]int{"pending": 0, "in_progress": 0, "completed": 2, "failed": 1, "skipped": 1}
	for k, n := range want {
		if r.Counts[k] != n {
			t.Errorf("counts[%s] = %d, want %d", k, r.Counts[k], n)
		}
	}
	if r.AgentTokens != (Tokens{Prompt: 450, Completion: 45, Total: 495}) || r.PlannerTokens != (Tokens{Prompt: 1000, Completion: 200, Total: 1200}) || r.Tokens.Total != 1695 {
		t.Errorf("tokens %+v %+v %+v", r.AgentTokens, r.PlannerTokens, r.Tokens)
	}
	// 1450 prompt × $2/M + 245 completion × $10/M.
	if r.CostUSD == nil || math.Abs(*r.CostUSD-(1450*2+245*10)/1e6) > 1e-12 {
		t.Errorf("cost %v", r.CostUSD)
	}
	b := r.Tasks[1]
	if b.CostUSD == nil || math.Abs(*b.CostUSD-(300*2+30*10)/1e6) > 1e-12 || b.Attempts != 2 || b.Level != 1 || b.Commit != "abc123" {
		t.Errorf("b: %+v", b)
	}
	if len(b.Timeline) != 2 || b.Timeline[0].Status != "failed" || !b.Started.Equal(t0.Add(6*time.Second)) || !b.Ended.Equal(t0.Add(13*time.Second)) {
		t.Errorf("b timeline %+v started %v ended %v", b.Timeline, b.Started, b.Ended)
	}
	c := r.Tasks[2]
	if c.Title != "Write c" || len(c.Timeline) != 1 || c.Timeline[0].Status != "failed" || !c.Timeline[0].End.Equal(t0.Add(9*time.Second)) {
		t.Errorf("c (old state) %+v", c)
	}
	if d := r.Tasks[3]; d.Level != 2 || d.Started != nil || len(d.Timeline) != 0 || d.SkippedBy != "c.x-1" {
		t.Errorf("d %+v", d)
	}
	// The table's time is dispatch to end over the attempts (what the
	// progress line says), not the agent's own share of it.
	if b.ElapsedMS != 6000 || b.DurationMS != 5000 || c.ElapsedMS != 3000 {
		t.Errorf("b elapsed %d agent %d; c elapsed %d", b.ElapsedMS, b.DurationMS, c.ElapsedMS)
	}
	if r.WallMS != 20000 || r.AgentMS != 12000 {
		t.Errorf("wall %d agent %d", r.WallMS, r.AgentMS)
	}

	unpriced := Build(testState(t), Options{Prices: Prices{"other": {Input: 1}}})
	if unpriced.CostUSD != nil || unpriced.Tasks[0].CostUSD != nil {
		t.Error("a model without a price must have no cost")
	}
	js, err := json.Marshal(unpriced)
	if err != nil || strings.Contains(string(js), "cost_usd") {
		t.Errorf("unpriced JSON has a cost: %v %s", err, js)
	}
}

func TestList(t *testing.T) {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	rows, err := List(l, Options{})
	if err != nil || len(rows) != 0 {
		t.Fatalf("empty volumes: %v %v", rows, err)
	}
	older := testState(t)
	older.RunID = "run-20261122-000000-0001"
	for _, st := range []*runrecord.State{older, testState(t)} {
		updated := st.Updated
		if err := st.Save(l, updated); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeFile(l.Run("run-20261124-000000-0bad")+"/state.json", "{"); err != nil {
		t.Fatal(err)
	}
	// Junk that parses: no run id, no start time (not a run of the year 1).
	if err := writeFile(l.Run("run-20261125-000000-junk")+"/state.json", "{}"); err != nil {
		t.Fatal(err)
	}
	rows, err = List(l, Options{Prices: Prices{"m1": {Input: 1, Output: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].ID != "run-20261125-000000-junk" || !strings.Contains(rows[0].Error, "not a planagent run state") ||
		rows[1].Error == "" || rows[2].ID != "run-20261123-010000-0001" || rows[3].ID != older.RunID {
		t.Fatalf("rows %+v", rows)
	}
	if r := rows[2]; r.Status != "failed" || r.Tasks != 4 || r.Counts["completed"] != 2 || r.Tokens.Total != 1695 || r.CostUSD == nil || r.Goal != "build a diamond" {
		t.Errorf("row %+v", r)
	}
}

func TestGraphFormats(t *testing.T) {
	r := Build(testState(t), Options{})
	g := GraphOf(r)
	if len(g.Nodes) != 4 || len(g.Edges) != 4 || g.Nodes[3].Status != "skipped" || g.Edges[3] != (Edge{From: "c.x-1", To: "d"}) {
		t.Errorf("graph %+v", g)
	}

	m := Mermaid(r)
	node := regexp.MustCompile(`^  (\w+)\["([^"]*)"\]:::(\w+)$`)
	edge := regexp.MustCompile(`^  (\w+) --> (\w+)$`)
	class := regexp.MustCompile(`^  classDef (\w+) fill:#[0-9a-f]{6},stroke:#[0-9a-f]{6},color:#000$`)
	lines := strings.Split(strings.TrimSuffix(m, "\n"), "\n")
	if lines[0] != "flowchart TD" {
		t.Fatalf("first line %q", lines[0])
	}
	nodes, edges := map[string]string{}, 0
	for _, ln := range lines[1:] {
		switch {
		case node.MatchString(ln):
			sm := node.FindStringSubmatch(ln)
			nodes[sm[1]] = sm[3]
			if sm[1] == "a" && sm[2] != "a: Set up #quot;the#quot; #lt;module#gt;<br/>completed" {
				t.Errorf("label not escaped: %q", sm[2])
			}
		case edge.MatchString(ln):
			edges++
		case class.MatchString(ln):
		default:
			t.Errorf("mermaid line does not parse: %q", ln)
		}
	}
	// Safe ids name their nodes; c.x-1 (mermaid syntax) is task_3.
	if len(nodes) != 4 || edges != 4 || nodes["task_3"] != "failed" || nodes["d"] != "skipped" {
		t.Errorf("mermaid nodes %v edges %d\n%s", nodes, edges, m)
	}

	d := Dot(r)
	for _, want := range []string{`"a" -> "b";`, `"c.x-1" -> "d";`, `fillcolor="#ffcdd2"`, `Set up \"the\" <module>`} {
		if !strings.Contains(d, want) {
			t.Errorf("dot lacks %s:\n%s", want, d)
		}
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Log("graphviz's dot is not installed: the dot output was not rendered (.ci/run installs graphviz)")
		return
	}
	cmd := exec.Command("dot", "-Tsvg")
	cmd.Stdin = strings.NewReader(d)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("dot -Tsvg: %v: %s\n%s", err, errb.String(), d)
	}
	if n := strings.Count(out.String(), `class="node"`); n != 4 {
		t.Errorf("svg has %d nodes, want 4", n)
	}
}

func TestMarkdownSummary(t *testing.T) {
	r := Build(testState(t), Options{Prices: Prices{"m1": {Input: 2, Output: 12}}})
	md := Markdown(r)
	for _, want := range []string{
		"# Run run-20261123-010000-0001: failed",
		"| task | status | attempts | tokens (prompt/completion) | cost | time | what was done |",
		"| b | completed | 2 | 300/30 | $0.0010 | 6s | b \\| written |",
		"| c.x-1 | failed | 1 | 50/5 | $0.0002 | 3s | tests failed |",
		"Totals: 4 tasks: 2 completed, 1 failed, 1 skipped, 0 pending.",
		"cost $0.0058 (m1)",
		"(every attempt's, added up: more than the wall time when tasks ran in parallel); wall time",
		"- c.x-1: continue — not needed",
		"```mermaid\nflowchart TD\n",
		"| b | 1 | +6s | +8s | 2s | failed |",
		"| b | 2 | +9s | +13s | 4s | completed |",
		"gantt\n  dateFormat x\n",
		"  b #2 (completed) :done, ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	// Attempts in the order they happened: a, then b#1 and c (same start), then b#2.
	if strings.Index(md, "| a | 1 |") > strings.Index(md, "| b | 1 |") || strings.Index(md, "| c.x-1 | 1 |") > strings.Index(md, "| b | 2 |") {
		t.Errorf("timeline not by start:\n%s", Timeline(r))
	}
	if s := Summary(Build(testState(t), Options{})); strings.Contains(s, "cost") || strings.Contains(s, "mermaid") {
		t.Errorf("unpriced terminal summary:\n%s", s)
	}
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// Titles cut for the graph's labels and the summary end in "…": a cut title
// does not read as a whole one ("…> notes/a" as another file name).
// Node t1 of the picture is task t1: the nodes are not numbered from 0
// beside ids numbered from 1; a keyword id gets a name of its own.
func TestMermaidNodesAreNamedByTheirTasks(t *testing.T) {
	r := &Run{Tasks: []Task{{ID: "t1", Status: "completed"}, {ID: "t2", Status: "pending", Dependencies: []string{"t1"}}, {ID: "end", Status: "pending"}}}
	m := Mermaid(r)
	for _, want := range []string{`  t1["t1: `, `  t2["t2: `, "  t1 --> t2\n", `  task_3["end: `} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
}

func TestFirstLineCut(t *testing.T) {
	title := "Write notes/a.md and notes/b.md from the outline, then link them > notes/index.md"
	got := firstLine(title, 60)
	if want := string([]rune(title)[:60]) + "…"; got != want {
		t.Errorf("firstLine cut = %q, want %q", got, want)
	}
	if got := firstLine("Short title\nand a second line", 60); got != "Short title" {
		t.Errorf("first line = %q", got)
	}
	if got := oneLine("  ünïcödé   spaced\n out  ", 9); got != "ünïcödé s…" {
		t.Errorf("oneLine = %q", got)
	}
	if m := Mermaid(&Run{Tasks: []Task{{ID: "a", Title: title, Status: "completed"}}}); !strings.Contains(m, "then link …<br/>") {
		t.Errorf("mermaid label of a long title not cut with …:\n%s", m)
	}
}

// A failed task's cell in the table (the terminal's and summary.md) keeps
// the end of its error, where the cause is.
func TestSummaryErrorCellKeepsItsTail(t *testing.T) {
	st := testState(t)
	for i := range st.Tasks {
		if st.Tasks[i].ID == "c.x-1" {
			st.Tasks[i].Error = "task c.x-1: attempt 1: " + strings.Repeat("a long middle ", 30) + "\nexec: \"/bin/sh\": stat /bin/sh: no such file or directory"
		}
	}
	for name, s := range map[string]string{"summary.md": Markdown(Build(st, Options{})), "table": Summary(Build(st, Options{}))} {
		if !strings.Contains(s, `exec: "/bin/sh": stat /bin/sh: no such file or directory`) || !strings.Contains(s, "| task c.x-1: attempt 1:") {
			t.Errorf("%s: the error cell lost an end:\n%s", name, s)
		}
	}
}

// A task in progress when the run was interrupted is shown as such in the
// table, and the totals count what the table shows.
func TestSummaryOfAnInterruptedRunAgreesWithItsTotals(t *testing.T) {
	st := testState(t)
	st.Tasks[2].Status, st.Tasks[2].Error = taskgraph.InProgress, ""
	st.Tasks[3].Status = taskgraph.Pending
	st.Status = runrecord.RunInterrupted
	s := Summary(Build(st, Options{}))
	for _, want := range []string{"| c.x-1 | interrupted | 1 |", "| d | pending | 0 |",
		"Totals: 4 tasks: 2 completed, 0 failed, 0 skipped, 1 pending, 1 interrupted (resume starts them again)."} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "in_progress") {
		t.Errorf("an interrupted run's summary shows a task in progress:\n%s", s)
	}
}

// A stopped run (Ctrl-C, a failure, a pause) has nothing running: its task
// left in progress in the record is interrupted in the view, counted so,
// and its open attempt ends when the run last wrote its state, so no
// view's clock keeps running. The record itself is left for resume.
func TestBuildStoppedRunHasNothingRunning(t *testing.T) {
	for _, status := range []runrecord.RunStatus{runrecord.RunInterrupted, runrecord.RunPaused, runrecord.RunFailed} {
		t.Run(string(status), func(t *testing.T) {
			st := testState(t)
			st.Tasks[2].Status, st.Tasks[2].Error = taskgraph.InProgress, ""
			st.Tasks[3].Status = taskgraph.Pending
			st.Info["c.x-1"] = &runrecord.TaskInfo{Attempt: 1, Spans: []runrecord.Span{{Attempt: 1, Start: t0.Add(6 * time.Second)}}}
			st.Status = status
			r := Build(st, Options{})
			c := r.Tasks[2]
			if c.ID != "c.x-1" || c.Status != StatusInterrupted {
				t.Fatalf("task %s: status %q, want %q", c.ID, c.Status, StatusInterrupted)
			}
			if r.Counts["in_progress"] != 0 || r.Counts[StatusInterrupted] != 1 {
				t.Errorf("counts %v: want 0 in_progress, 1 interrupted", r.Counts)
			}
			s := c.Timeline[0]
			if s.End == nil || !s.End.Equal(st.Updated) || s.Status != StatusInterrupted {
				t.Errorf("the open attempt: %+v, want ended at %v, interrupted", s, st.Updated)
			}
			if c.ElapsedMS != 14_000 {
				t.Errorf("elapsed %d ms, want 14000 (dispatch to the run's stop)", c.ElapsedMS)
			}
			for name, text := range map[string]string{"mermaid": Mermaid(r), "dot": Dot(r)} {
				if strings.Contains(text, "in progress") || !strings.Contains(text, StatusInterrupted) {
					t.Errorf("%s shows the task in progress:\n%s", name, text)
				}
			}
			if g := GraphOf(r); g.Nodes[2].Status != StatusInterrupted {
				t.Errorf("graph json: %+v", g.Nodes[2])
			}
			if st.Tasks[2].Status != taskgraph.InProgress || !st.Info["c.x-1"].Spans[0].End.IsZero() {
				t.Error("Build changed the record resume reads")
			}
		})
	}
	// A run being driven shows its task running, its attempt open.
	st := testState(t)
	st.Tasks[2].Status = taskgraph.InProgress
	st.Info["c.x-1"] = &runrecord.TaskInfo{Attempt: 1, Spans: []runrecord.Span{{Attempt: 1, Start: t0.Add(6 * time.Second)}}}
	st.Status = runrecord.RunRunning
	if c := Build(st, Options{}).Tasks[2]; c.Status != "in_progress" || c.Timeline[0].End != nil || c.Timeline[0].Status != "running" {
		t.Errorf("a running run's task: %+v", c)
	}
}
