// Command codingagent carries out coding tasks with an LLM tool-calling loop
// over a workspace: one goal (exec), every command file of the volumes
// (watch), or interactively (chat).
package main

import (
	"os"

	"github.com/codeagent/codeagent/codingagent/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
