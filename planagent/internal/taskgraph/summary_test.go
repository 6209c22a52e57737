package taskgraph

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
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

// A long error keeps its end, where the cause is, in the summary line
// (status's): its start too, never its start twice.
func TestSummaryErrorKeepsItsTail(t *testing.T) {
	g := mustNew(t, tk("build"))
	if err := g.Start("build"); err != nil {
		t.Fatal(err)
	}
	long := `acceptance command "go test ./..." could not run: create the acceptance container from codeagent/busybox:local: ` +
		strings.Repeat("some detail in the middle ", 20) + "\nOCI runtime create failed: exec: \"/bin/sh\": stat /bin/sh: no such file or directory"
	if err := g.Fail("build", long); err != nil {
		t.Fatal(err)
	}
	s := g.Summary()
	for _, want := range []string{`acceptance command "go test`, `exec: "/bin/sh": stat /bin/sh: no such file or directory`, " … "} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "acceptance command") != 1 {
		t.Errorf("the error's start is doubled:\n%s", s)
	}
}

func TestKeepEnds(t *testing.T) {
	if got := KeepEnds("short", 10); got != "short" {
		t.Errorf("%q", got)
	}
	got := KeepEnds("0123456789abcdefghijklmnopqrstuvwxyz", 18)
	if got != "012345 … uvwxyz" && !strings.HasPrefix(got, "012345 … ") {
		t.Errorf("%q", got)
	}
	if !strings.HasSuffix(got, "xyz") || len([]rune(got)) > 18 {
		t.Errorf("%q: want the end kept within 18 runes", got)
	}
}
