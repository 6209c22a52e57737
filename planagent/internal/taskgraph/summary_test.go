package taskgraph

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestSummaryGolden(t *testing.T) {
	tests := []struct {
		name  string
		tasks []Task
		steps []step
	}{
		{name: "empty"},
		{
			name:  "fresh",
			tasks: []Task{tk("setup"), tk("api", "setup"), {ID: "docs", Description: "Write the README\nwith examples"}},
		},
		{
			name: "every status",
			tasks: []Task{
				tk("scaffold"), tk("model", "scaffold"), tk("handlers", "model"), tk("cli", "scaffold"),
				tk("tests", "handlers", "cli"), tk("docs"), tk("lint"),
			},
			steps: []step{
				{"start", "scaffold", ""}, {"complete", "scaffold", "created go.mod and cmd/\nmore detail that is not shown"},
				{"start", "model", ""}, {"fail", "model", "go build: undefined: Store"},
				{"start", "cli", ""},
				{"start", "docs", ""}, {"complete", "docs", ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustNew(t, tt.tasks...)
			for _, s := range tt.steps {
				if err := apply(g, s); err != nil {
					t.Fatalf("%s %s: %v", s.op, s.id, err)
				}
			}
			got := g.Summary()
			path := filepath.Join("testdata", "summary_"+filepath.Base(t.Name())+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden %s (run go test -update to create it): %v", path, err)
			}
			if got != string(want) {
				t.Errorf("Summary() mismatch with %s:\n got:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}
