// Command planagent turns a goal into a task graph with an LLM and drives a
// codingagent through it over the shared volumes.
package main

import (
	"os"

	"github.com/codeagent/codeagent/planagent/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
