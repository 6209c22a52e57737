package docgen

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The markers around the figures table of docs/benchmarks.md.
const (
	beginBench = "<!-- BEGIN GENERATED: benchmarks (make bench) -->"
	endBench   = "<!-- END GENERATED: benchmarks -->"
)

// benchLine is one result line of `go test -bench`:
// "BenchmarkPickup-2  300  734512 ns/op  0.73 p50-ms".
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// Benchmarks rewrites the figures table of doc (docs/benchmarks.md) from
// out, the output of `go test -bench` (bench.out): each row whose benchmark
// column names a benchmark that ran gets its metrics as the figure and
// machine as the machine and load; the other rows stay as they were, with
// the figure and the machine they were taken on.
func Benchmarks(doc, out []byte, machine string) ([]byte, error) {
	head, rest, ok := bytes.Cut(doc, []byte(beginBench))
	if !ok {
		return nil, fmt.Errorf("docgen: no line %q in the benchmarks document", beginBench)
	}
	table, tail, ok := bytes.Cut(rest, []byte(endBench))
	if !ok {
		return nil, fmt.Errorf("docgen: no line %q after %q", endBench, beginBench)
	}
	results := parseBench(out)
	lines := strings.Split(string(table), "\n")
	for i, line := range lines {
		cells := splitRow(line)
		if len(cells) != 5 || strings.HasPrefix(cells[0], "---") || cells[0] == "what" {
			continue
		}
		if fig := figure(results, cells[3]); fig != "" {
			cells[1], cells[4] = fig, machine
			lines[i] = joinRow(cells)
		}
	}
	var b bytes.Buffer
	b.Write(head)
	b.WriteString(beginBench)
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString(endBench)
	b.Write(tail)
	return b.Bytes(), nil
}

type result struct {
	name    string // without the -GOMAXPROCS suffix
	metrics string
}

func parseBench(out []byte) []result {
	var rs []result
	for _, line := range strings.Split(string(out), "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		rs = append(rs, result{name: m[1], metrics: metrics(m[2])})
	}
	return rs
}

// metrics renders a result's value-unit pairs for a reader: ns/op as ms,
// the allocation counts left out (they are not what a row measures).
func metrics(s string) string {
	f := strings.Fields(s)
	var parts []string
	for i := 0; i+1 < len(f); i += 2 {
		v, unit := f[i], f[i+1]
		switch unit {
		case "B/op", "allocs/op", "MB/s":
			continue
		case "ns/op":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			v, unit = strconv.FormatFloat(x/1e6, 'g', 4, 64), "ms/op"
		}
		parts = append(parts, v+" "+unit)
	}
	return strings.Join(parts, ", ")
}

var codeName = regexp.MustCompile("`(Benchmark[^`]*)`")

// figure is the figure of the benchmarks a row's benchmark cell names: the
// metrics of every result of each (a sub-benchmark prefixed with its name),
// "" when none of them ran.
func figure(rs []result, cell string) string {
	var parts []string
	names := codeName.FindAllStringSubmatch(cell, -1)
	for _, n := range names {
		for _, r := range rs {
			if r.name != n[1] && !strings.HasPrefix(r.name, n[1]+"/") {
				continue
			}
			label := strings.TrimPrefix(r.name, "Benchmark")
			if len(names) == 1 && r.name == n[1] {
				label = ""
			}
			if label != "" {
				label += ": "
			}
			parts = append(parts, label+r.metrics)
		}
	}
	return strings.Join(parts, "; ")
}

// splitRow splits a markdown table row into its cells ("| a | b |"), nil
// for a line that is not a row.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	// An escaped \| is part of its cell.
	const bar = "\x00"
	cells := strings.Split(strings.ReplaceAll(line[1:len(line)-1], `\|`, bar), "|")
	for i := range cells {
		cells[i] = strings.ReplaceAll(strings.TrimSpace(cells[i]), bar, `\|`)
	}
	return cells
}

// joinRow is splitRow's inverse, an empty cell written "| |" as by hand.
func joinRow(cells []string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cells {
		if c != "" {
			b.WriteString(" " + c)
		}
		b.WriteString(" |")
	}
	return b.String()
}
