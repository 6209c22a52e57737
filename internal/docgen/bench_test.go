package docgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchmarksRewritesTheRowsThatRan(t *testing.T) {
	doc := "# B\n\n" + beginBench + "\n| what | figure | goal | benchmark | machine and load |\n|---|---|---|---|---|\n" +
		"| pick-up | old | p50 < 5 ms | `BenchmarkPickup` | old machine |\n" +
		"| map | old map | | `BenchmarkGoStdlib` | old machine |\n" +
		"| cluster | 1.80 s | | `BenchmarkKube` | the cluster's |\n" + endBench + "\n\nafter\n"
	out := "goos: linux\nBenchmarkPickup-2   \t     300\t    734512 ns/op\t         0.7300 p50-ms\t         1.060 p95-ms\t  1234 B/op\t 5 allocs/op\n" +
		"BenchmarkGoStdlib/cold-2  3  800000000 ns/op  66.00 peak-MB\nBenchmarkGoStdlib/warm-2  3  40000000 ns/op\nok  \tpkg\t1.0s\n"
	got, err := Benchmarks([]byte(doc), []byte(out), "2 cores, load 1.2")
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		"| pick-up | 0.7345 ms/op, 0.7300 p50-ms, 1.060 p95-ms | p50 < 5 ms | `BenchmarkPickup` | 2 cores, load 1.2 |",
		"| map | GoStdlib/cold: 800 ms/op, 66.00 peak-MB; GoStdlib/warm: 40 ms/op | | `BenchmarkGoStdlib` | 2 cores, load 1.2 |",
		"| cluster | 1.80 s | | `BenchmarkKube` | the cluster's |",
		"\n\nafter\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "B/op") {
		t.Errorf("allocation counts in the table:\n%s", s)
	}
}

// The checked-in document must be one the script can rewrite: its markers
// and rows as Benchmarks reads them.
func TestBenchmarksDocumentIsRewritable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Benchmarks(doc, nil, "unused")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(doc) {
		t.Error("rewriting with no results changed docs/benchmarks.md")
	}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if c := splitRow(line); len(c) == 5 && strings.Contains(c[3], "`Benchmark") {
			rows++
		} else if c != nil && len(c) != 5 {
			t.Errorf("a row of %d cells: %s", len(c), line)
		}
	}
	if rows < 20 {
		t.Errorf("%d benchmark rows", rows)
	}
}
