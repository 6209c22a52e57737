package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunPlanFile10000 is the whole product on a 10 000-task chain:
// `planagent run --plan` with the local runtime, the real codingagent
// watcher picking up each command over the volumes, one model call per
// task against the test server, the report, the journal. It reports the
// cost per task over the first and the last tenth of the tasks: flat when
// nothing in the run grows with it.
func BenchmarkRunPlanFile10000(b *testing.B) { benchRunPlanFile(b, 10000) }

// BenchmarkRunPlanFile1000 is the same at a tenth of the size.
func BenchmarkRunPlanFile1000(b *testing.B) { benchRunPlanFile(b, 1000) }

func benchRunPlanFile(b *testing.B, n int) {
	var plan strings.Builder
	plan.WriteString("title: a long chain\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&plan, "  - id: t%05d\n    description: \"TOKEN-BULK step %d\"\n", i, i)
		if i > 0 {
			fmt.Fprintf(&plan, "    dependencies: [t%05d]\n", i-1)
		}
	}
	for b.Loop() {
		b.StopTimer()
		e := newBenchEnv(b, &fakeModel{tasks: []scriptTask{{token: "TOKEN-BULK"}}})
		planFile := filepath.Join(e.dir, "plan.yaml")
		if err := os.WriteFile(planFile, []byte(plan.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd := e.command("run", "--plan", planFile, "--yes", "--json")
		b.StartTimer()
		start := time.Now()
		out, err := cmd.Output()
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("run --plan: %v", err)
		}
		starts := map[string]time.Time{}
		var end map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var ev struct {
				Type   string    `json:"type"`
				TaskID string    `json:"task_id"`
				Time   time.Time `json:"time"`
			}
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			if ev.Type == "task_start" {
				starts[ev.TaskID] = ev.Time
			}
			if ev.Type == "run_end" {
				_ = json.Unmarshal([]byte(line), &end)
			}
		}
		if end == nil || end["status"] != "completed" || len(starts) != n {
			b.Fatalf("run did not complete: %d tasks started, run_end %v", len(starts), end)
		}
		per := func(from, to int) float64 {
			return float64(starts[fmt.Sprintf("t%05d", to)].Sub(starts[fmt.Sprintf("t%05d", from)]).Microseconds()) / 1000 / float64(to-from)
		}
		b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(n), "ms/task")
		tenth := n / 10
		b.ReportMetric(per(0, tenth), "first-tenth-ms/task")
		b.ReportMetric(per(n-1-tenth, n-1), "last-tenth-ms/task")
		b.StartTimer()
	}
}
