package taskgraph

import (
	"fmt"
	"testing"
)

// BenchmarkRunPlan drives a 50-task plan (the default limit) from start to
// finish the way the orchestrator does: Ready, Start, Complete, Summary.
func BenchmarkRunPlan(b *testing.B) {
	tasks := make([]Task, 50)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%02d", i), Description: "step"}
		if i >= 2 {
			tasks[i].Dependencies = []string{tasks[i-1].ID, tasks[i/2].ID}
		}
	}
	for b.Loop() {
		g, err := New(tasks)
		if err != nil {
			b.Fatal(err)
		}
		for !g.Done() {
			for _, id := range g.Ready() {
				if err := g.Start(id); err != nil {
					b.Fatal(err)
				}
				if err := g.Complete(id, "ok"); err != nil {
					b.Fatal(err)
				}
			}
			_ = g.Summary()
		}
	}
}
