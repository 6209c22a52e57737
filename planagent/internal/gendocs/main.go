// Command gendocs writes planagent's command reference and the settings
// table of configuration.md into the docs dir given (make docs: docs).
package main

import (
	"fmt"
	"os"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/docgen"
	"github.com/codeagent/codeagent/planagent/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DOCS_DIR (make docs runs it with docs)")
		os.Exit(2)
	}
	if err := generate(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// generate builds a fresh tree for each writer: the reference adds cobra's
// help and completion commands to the tree it is given. The cli package's
// TestDocsCurrent writes the same and diffs it with docs/.
func generate(dir string) error {
	if err := docgen.Reference(cli.NewCmdRoot(cmdutil.NewFactory()), dir); err != nil {
		return err
	}
	return docgen.Settings(cli.NewCmdRoot(cmdutil.NewFactory()), dir)
}
