// Command benchdoc rewrites the figures table of docs/benchmarks.md from
// the output of `go test -bench` (scripts/bench.sh runs it at the end of
// make bench): benchdoc DOC BENCH_OUT "MACHINE AND LOAD".
package main

import (
	"fmt"
	"os"

	"github.com/codeagent/codeagent/internal/docgen"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, `usage: benchdoc DOC BENCH_OUT "MACHINE AND LOAD" (scripts/bench.sh runs it)`)
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

func run(docPath, outPath, machine string) error {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		return err
	}
	updated, err := docgen.Benchmarks(doc, out, machine)
	if err != nil {
		return err
	}
	return os.WriteFile(docPath, updated, 0o644)
}
